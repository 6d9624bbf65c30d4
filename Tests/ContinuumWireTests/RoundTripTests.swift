import ContinuumCore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

@Suite("Round trips: encode, then decode with FrameDecoder")
struct RoundTripTests {
    /// Encodes, checks the frame's header, decodes, and checks that nothing is left over.
    static func roundTrip(_ message: WireMessage, sourceLocation: SourceLocation = #_sourceLocation) -> WireMessage? {
        let bytes = WireCodec.encode(message)
        #expect(bytes.count >= 6, sourceLocation: sourceLocation)
        #expect(Array(bytes[0..<4]) == be32(UInt32(bytes.count - 4)), "length prefix", sourceLocation: sourceLocation)
        #expect(bytes[4] == WireLimits.frameVersion, sourceLocation: sourceLocation)
        #expect(bytes[5] == message.typeCode, sourceLocation: sourceLocation)
        let outcome = feed(bytes)
        #expect(outcome.error == nil, sourceLocation: sourceLocation)
        #expect(outcome.leftover == 0, sourceLocation: sourceLocation)
        #expect(outcome.messages.count == 1, sourceLocation: sourceLocation)
        return outcome.messages.first
    }

    @Test("every message type", arguments: Samples.messages)
    func everyType(message: WireMessage) throws {
        #expect(Self.roundTrip(message) == message)
        try WireCodec.validate(message)
    }

    @Test("every message type is among the samples, with its name")
    func typeNames() {
        let names = Set(Samples.messages.map(\.typeName))
        #expect(
            names == [
                "HELLO", "ERROR", "CLOCK", "OFFER", "RECORDS", "ACK", "REQUEST", "DONE", "PHOTO_WANT", "PHOTO_DATA",
                "PHOTO_END", "PHOTO_MISSING", "PING", "PONG", "INTEREST", "PUSH", "CLOCK_SINCE", "CLOCK_UNKNOWN",
                "THUMB_WANT", "THUMB_DATA", "THUMB_MISSING", "HAVE", "TREE",
            ]
        )
        for message in Samples.messages { #expect(WireMessage.typeName(of: message.typeCode) == message.typeName) }
        #expect(WireMessage.typeName(of: 0x00) == nil)
        #expect(WireMessage.typeName(of: 0x27) == nil)
    }

    @Test("INTEREST entries are sent in ascending order of post, whatever order they are given in")
    func interestOrder() {
        let entries = (0..<300).map { PostInterest(post: post(number: $0), hops: UInt8($0 % 9)) }
        let decoded = Self.roundTrip(.interest(replace: true, entries.reversed()))
        #expect(decoded == .interest(replace: true, entries))
    }

    @Test("a stream of many frames decodes in order")
    func stream() {
        let bytes = Samples.messages.flatMap(WireCodec.encode)
        let outcome = feed(bytes)
        #expect(outcome.error == nil)
        #expect(outcome.leftover == 0)
        #expect(outcome.messages == Samples.messages)
    }

    @Test("1000 records, the most a batch holds")
    func maxRecordCount() {
        let records = (0..<WireLimits.maxRecordsPerBatch).map { index in
            [UInt8](repeating: UInt8(truncatingIfNeeded: index), count: WireLimits.maxBatchBytes / 1000)
        }
        #expect(Self.roundTrip(.records(live: false, records)) == .records(live: false, records))
    }

    @Test("a batch of exactly 1 MiB, in records of the largest size")
    func maxBatchBytes() {
        let records = (0..<WireLimits.maxBatchBytes / Limits.recordBytes).map { index in
            [UInt8](repeating: UInt8(index), count: Limits.recordBytes)
        }
        #expect(records.reduce(0) { $0 + $1.count } == WireLimits.maxBatchBytes)
        #expect(Self.roundTrip(.records(live: true, records)) == .records(live: true, records))
    }

    @Test("a 256 KiB chunk, and chunks at the very end of the largest photo")
    func maxChunk() {
        var random = SplitMix64(seed: 5)
        let chunk = (0..<WireLimits.photoChunkBytes).map { _ in UInt8.random(in: 0...255, using: &random) }
        for message in [
            WireMessage.photoData(asset(1), offset: 0, chunk: chunk),
            .photoData(asset(1), offset: Limits.photoBytes - UInt64(chunk.count), chunk: chunk),
            .photoData(asset(1), offset: Limits.photoBytes - 1, chunk: [9]),
            .photoWant(asset(1), offset: Limits.photoBytes),
            .photoEnd(asset(1), totalBytes: Limits.photoBytes),
            .photoEnd(asset(1), totalBytes: 1),
        ] {
            #expect(Self.roundTrip(message) == message)
        }
    }

    @Test("a clock of 100,000 entries and a request of 10,000 ranges")
    func maxClockAndRanges() {
        var random = SplitMix64(seed: 9)
        var heads: [AuthorID: UInt64] = [:]
        while heads.count < WireLimits.maxClockEntries {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &random) }
            heads[AuthorID(bytes: bytes)!] = UInt64.random(in: 1...Limits.maxSequence, using: &random)
        }
        let clock = VectorClock(heads)
        let frame = WireCodec.encode(.clock(round: 1, clock))
        #expect(frame.count == 4 + 2 + 8 + 40 * WireLimits.maxClockEntries)
        #expect(frame.count - 4 <= WireLimits.maxFrameBytes)
        #expect(feed(frame).messages == [.clock(round: 1, clock)])
        #expect(Self.roundTrip(.ack(clock)) == .ack(clock))

        let ranges = heads.keys.prefix(WireLimits.maxRanges).map { LogRange(author: $0, range: 1...heads[$0]!) }
        #expect(Self.roundTrip(.request(ranges)) == .request(ranges))
    }

    @Test("the largest name and error message")
    func maxTexts() {
        let name = String(repeating: "é", count: Limits.nameBytes / 2)
        let hello = WireMessage.hello(Hello(nonce: .testNonce, node: author(1), name: name))
        #expect(Self.roundTrip(hello) == hello)
        let error = WireMessage.error(
            WireError(.internal, String(repeating: "x\n\t", count: WireLimits.maxErrorMessageBytes / 3) + "y")
        )
        #expect(WireCodec.encode(error).count == 4 + 2 + 4 + WireLimits.maxErrorMessageBytes)
        #expect(Self.roundTrip(error) == error)
    }

    @Test("a frame exactly at a decoder's limit is accepted; one byte more is refused")
    func frameLimit() {
        let frame = WireCodec.encode(.records(live: false, [[UInt8](repeating: 1, count: 91)]))
        #expect(frame.count - 4 == 100)
        #expect(feed(frame, maxFrameBytes: 100).messages.count == 1)
        #expect(feed(frame, maxFrameBytes: 99).error?.code == .frameTooLarge)
    }

    @Test("texts are made to fit when encoding: cut at a character, controls replaced, blank names dropped")
    func textFitting() {
        func sentName(_ name: String) -> String?? {
            guard case .hello(let hello) = Self.roundTrip(.hello(Hello(nonce: .testNonce, node: author(1), name: name)))
            else { return .none }
            return .some(hello.name)
        }
        #expect(sentName(String(repeating: "a", count: 70)) == String(repeating: "a", count: 64))
        // 21 three-byte characters are 63 bytes; the 22nd does not fit.
        #expect(sentName(String(repeating: "€", count: 30)) == String(repeating: "€", count: 21))
        #expect(sentName("a\u{1B}[31mred\nline") == "a\u{FFFD}[31mred\u{FFFD}line")
        #expect(sentName("") == .some(nil))
        #expect(sentName(" \t ") == .some(nil))
        #expect(sentName("tab\tok") == "tab\tok")

        let long = String(repeating: "€", count: 500)
        guard case .error(let error) = Self.roundTrip(.error(WireError(.timeout, long + "\r\n\u{7F}"))) else {
            Issue.record("not an error")
            return
        }
        #expect(error.code == .timeout)
        #expect(error.message == String(repeating: "€", count: 341))
        guard case .error(let short) = Self.roundTrip(.error(WireError(.timeout, "a\r\nb\u{7F}"))) else { return }
        #expect(short.message == "a\u{FFFD}\nb\u{FFFD}")
    }

    @Test("network ids: named ones are SHA-256 of the prefixed name; 32 bytes exactly")
    func networkIDs() {
        // hashlib.sha256(b"continuum-network-v1:default").hexdigest(), computed in Python.
        #expect(NetworkID.default.hex == "f83a6b087032c223211534c5bde190784da595cd1d51cc1c0e664d4eecd77ebd")
        #expect(NetworkID.named("default") == .default)
        #expect(NetworkID.named("lab") != .default)
        #expect(NetworkID(hex: NetworkID.default.hex.uppercased()) == .default)
        #expect(NetworkID(bytes: [UInt8](repeating: 0, count: 31)) == nil)
        #expect(NetworkID(bytes: [UInt8](repeating: 0, count: 33)) == nil)
        #expect(NetworkID(hex: "00") == nil)
        #expect(NetworkID.default.short == "f83a6b087032")
    }

    @Test("error codes have names and descriptions")
    func errorCodes() {
        let codes: [WireError.Code] = [
            .malformedFrame, .frameTooLarge, .unsupportedVersion, .wrongNetwork, .selfConnection, .identityMismatch,
            .badRecord, .timeout, .duplicateSession, .shuttingDown, .plaintextRefused, .unexpectedMessage, .internal,
        ]
        #expect(codes.map(\.rawValue) == Array(1...13))
        #expect(Set(codes.map(\.name)).count == 13)
        #expect(WireError.Code(rawValue: 77).name == "error 77")
        #expect(WireError(.wrongNetwork, "elsewhere").description == "wrong network: elsewhere")
    }
}
