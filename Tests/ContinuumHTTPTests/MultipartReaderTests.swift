import Foundation
import Testing

@testable import ContinuumHTTP

/// The streaming multipart reader, fed every way a network could cut the bytes.
@Suite("Multipart reader")
struct MultipartReaderTests {
    /// What the reader reported, in a form a test can compare.
    struct Part: Equatable {
        var headers: [String: String]
        var body: [UInt8]
    }

    static let boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"

    static func body(_ parts: [(String, [UInt8])], preamble: String = "") -> [UInt8] {
        var bytes = Array(preamble.utf8)
        for (disposition, content) in parts {
            bytes += Array("--\(boundary)\r\nContent-Disposition: \(disposition)\r\n\r\n".utf8)
            bytes += content
            bytes += Array("\r\n".utf8)
        }
        bytes += Array("--\(boundary)--\r\n".utf8)
        return bytes
    }

    /// Feeds `bytes` in pieces of the given sizes (cycled), and collects the parts.
    static func read(_ bytes: [UInt8], pieces: [Int]) throws -> [Part] {
        var reader = MultipartReader(boundary: boundary)
        var parts: [Part] = []
        var offset = 0
        var index = 0
        while offset < bytes.count {
            let size = max(1, pieces[index % pieces.count])
            let end = min(bytes.count, offset + size)
            try bytes[offset..<end].withUnsafeBytes { raw in
                try reader.feed(raw) { event in
                    switch event {
                    case .headers(let headers): parts.append(Part(headers: headers, body: []))
                    case .body(let chunk): parts[parts.count - 1].body += chunk
                    case .partEnd: break
                    }
                }
            }
            offset = end
            index += 1
        }
        try reader.finish()
        return parts
    }

    /// A body whose content holds near-delimiters: CR, CRLF, CRLF-- and most of the boundary.
    static let tricky: [UInt8] = Array("a\r\nb\r\n-\r\n--\r\n--\(boundary.dropLast())x\r".utf8) + [0, 13, 255]

    static let expected = [
        Part(headers: ["content-disposition": "form-data; name=\"caption\""], body: Array("Café".utf8)),
        Part(headers: ["content-disposition": "form-data; name=\"photo\"; filename=\"a.bin\""], body: tricky),
        Part(headers: ["content-disposition": "form-data; name=\"empty\""], body: []),
    ]

    static var sample: [UInt8] {
        body(
            [
                ("form-data; name=\"caption\"", Array("Café".utf8)),
                ("form-data; name=\"photo\"; filename=\"a.bin\"", tricky),
                ("form-data; name=\"empty\"", []),
            ],
            preamble: "ignored preamble\r\n"
        )
    }

    @Test func wholeBody() throws {
        #expect(try Self.read(Self.sample, pieces: [Self.sample.count]) == Self.expected)
    }

    @Test func cutAtEveryByte() throws {
        let bytes = Self.sample
        for cut in 1..<bytes.count {
            #expect(try Self.read(bytes, pieces: [cut, bytes.count]) == Self.expected, "cut at \(cut)")
        }
    }

    @Test func oneByteAtATimeAndOddPieces() throws {
        #expect(try Self.read(Self.sample, pieces: [1]) == Self.expected)
        #expect(try Self.read(Self.sample, pieces: [3, 7, 1, 64]) == Self.expected)
    }

    @Test func largeBodyIsPassedOnNotGathered() throws {
        var content = [UInt8](repeating: 0x41, count: 3_000_000)
        content[1_000_000] = 13
        let bytes = Self.body([("form-data; name=\"photo\"", content)])
        var reader = MultipartReader(boundary: Self.boundary)
        var received = 0
        var largestPiece = 0
        for start in stride(from: 0, to: bytes.count, by: 65536) {
            try bytes[start..<min(bytes.count, start + 65536)].withUnsafeBytes { raw in
                try reader.feed(raw) { event in
                    if case .body(let chunk) = event {
                        received += chunk.count
                        largestPiece = max(largestPiece, chunk.count)
                    }
                }
            }
        }
        try reader.finish()
        #expect(received == content.count)
        #expect(largestPiece <= 65536 + 64, "each piece is about one network read")
    }

    @Test func malformedInputIsRefused() throws {
        let truncated = Array(Self.sample.dropLast(10))
        #expect(throws: MultipartReader.Failure.self) { try Self.read(truncated, pieces: [100]) }
        let badHeader = Array("--\(Self.boundary)\r\nno colon here\r\n\r\nx\r\n--\(Self.boundary)--".utf8)
        #expect(throws: MultipartReader.Failure.self) { try Self.read(badHeader, pieces: [100]) }
        let badDelimiter = Array("--\(Self.boundary)XX".utf8)
        #expect(throws: MultipartReader.Failure.self) { try Self.read(badDelimiter, pieces: [100]) }
        let hugeHeaders = Array("--\(Self.boundary)\r\nX: \(String(repeating: "a", count: 20_000))".utf8)
        #expect(throws: MultipartReader.Failure.self) { try Self.read(hugeHeaders, pieces: [4096]) }
    }
}
