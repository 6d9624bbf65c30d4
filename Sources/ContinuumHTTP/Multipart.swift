import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A streaming `multipart/form-data` reader (RFC 7578): a part's body is handed on as its bytes arrive and never
/// gathered; only a few bytes that might begin a delimiter, and a part's headers (at most 16 KiB), are held back.
/// The search uses `memchr` and `memcmp`, so it runs at memory speed in debug builds too.
struct MultipartReader {
    enum Failure: Error, CustomStringConvertible {
        case headersTooLong
        case malformedHeader
        case malformedDelimiter
        case truncated

        var description: String {
            switch self {
            case .headersTooLong: "a part's headers are longer than 16 KiB"
            case .malformedHeader: "a part header is not 'Name: value'"
            case .malformedDelimiter: "a boundary delimiter is followed by neither CRLF nor '--'"
            case .truncated: "the body ends before the closing boundary"
            }
        }
    }

    /// What the reader meets, in order: for each part its headers, its body in pieces, its end.
    enum Event {
        case headers([String: String])
        case body(UnsafeRawBufferPointer)
        case partEnd
    }

    private enum State {
        case preamble, headers, body, afterDelimiter, done
    }

    static let headerLimit = 16 * 1024

    /// `CRLF--boundary`: what ends a part's body.
    private let delimiter: [UInt8]
    private var state = State.preamble
    /// Bytes not yet consumed: at most a delimiter's length in the body, or the headers being read.
    /// It starts with CRLF, so that the first delimiter, which has none before it, is found like the others.
    private var pending: [UInt8] = [13, 10]

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
    }

    var isComplete: Bool { if case .done = state { true } else { false } }

    /// Reads the next bytes of the body, reporting what they complete.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) throws {
        if case .done = state { return }
        var buffer = pending
        buffer.append(contentsOf: bytes)
        pending = []
        try buffer.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                switch state {
                case .preamble, .body:
                    let (end, found) = Self.search(delimiter, in: raw, from: offset)
                    if case .body = state, end > offset {
                        try handle(.body(UnsafeRawBufferPointer(rebasing: raw[offset..<end])))
                    }
                    guard found else {
                        pending = Array(raw[end...])
                        return
                    }
                    if case .body = state { try handle(.partEnd) }
                    state = .afterDelimiter
                    offset = end + delimiter.count
                case .afterDelimiter:
                    guard raw.count - offset >= 2 else {
                        pending = Array(raw[offset...])
                        return
                    }
                    switch (raw[offset], raw[offset + 1]) {
                    case (13, 10): state = .headers
                    case (45, 45): state = .done
                    default: throw Failure.malformedDelimiter
                    }
                    offset += 2
                case .headers:
                    if raw.count - offset >= 2, raw[offset] == 13, raw[offset + 1] == 10 {
                        try handle(.headers([:]))  // a part without headers
                        state = .body
                        offset += 2
                        continue
                    }
                    guard let end = Self.find([13, 10, 13, 10], in: raw, from: offset, partial: false) else {
                        guard raw.count - offset <= Self.headerLimit else { throw Failure.headersTooLong }
                        pending = Array(raw[offset...])
                        return
                    }
                    guard end - offset <= Self.headerLimit else { throw Failure.headersTooLong }
                    try handle(.headers(try Self.headers(raw[offset..<end])))
                    state = .body
                    offset = end + 4
                case .done:
                    return
                }
            }
        }
    }

    /// Throws unless the closing delimiter was read.
    func finish() throws {
        guard isComplete else { throw Failure.truncated }
    }

    /// Where the delimiter starts (and true), or where bytes that could begin it start (and false): all before
    /// that is certainly not part of a delimiter.
    private static func search(
        _ needle: [UInt8],
        in raw: UnsafeRawBufferPointer,
        from start: Int
    ) -> (Int, Bool) {
        if let full = find(needle, in: raw, from: start, partial: true) {
            return (full, raw.count - full >= needle.count)
        }
        return (raw.count, false)
    }

    /// The first place at or after `start` where `needle` occurs; with `partial`, also where a prefix of it runs
    /// to the end of the bytes.
    private static func find(
        _ needle: [UInt8],
        in raw: UnsafeRawBufferPointer,
        from start: Int,
        partial: Bool
    ) -> Int? {
        guard let base = raw.baseAddress, start < raw.count else { return nil }
        var position = start
        return needle.withUnsafeBytes { pattern -> Int? in
            while position < raw.count {
                guard let hit = memchr(base + position, Int32(needle[0]), raw.count - position) else { return nil }
                let index = base.distance(to: UnsafeRawPointer(hit))
                let available = min(needle.count, raw.count - index)
                if memcmp(base + index, pattern.baseAddress!, available) == 0 {
                    if available == needle.count || partial { return index }
                }
                position = index + 1
            }
            return nil
        }
    }

    private static func headers(_ bytes: Slice<UnsafeRawBufferPointer>) throws -> [String: String] {
        var headers: [String: String] = [:]
        for line in String(decoding: bytes, as: UTF8.self).components(separatedBy: "\r\n") where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Failure.malformedHeader }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()] =
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return headers
    }
}
