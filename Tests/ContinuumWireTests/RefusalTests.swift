import ContinuumCore
import ContinuumWire
import Foundation
import Testing

@Suite("Refusals: every bad frame is an error with a code and a message that says what was wrong")
struct RefusalTests {
    /// Feeds the bytes at once and one at a time; both must stop with the same error, of this code, whose message
    /// contains `fragment`.
    static func expectRefused(
        _ bytes: [UInt8],
        _ code: WireError.Code,
        _ fragment: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let whole = feed(bytes)
        let bytewise = feedBytewise(bytes)
        #expect(whole.error?.code == code, "\(whole.error?.description ?? "no error")", sourceLocation: sourceLocation)
        #expect(
            whole.error?.message.contains(fragment) == true,
            "\(whole.error?.description ?? "no error") should mention \(fragment)",
            sourceLocation: sourceLocation
        )
        #expect(bytewise == whole, sourceLocation: sourceLocation)
    }

    static let network = [UInt8](repeating: 0xaa, count: 32)
    static let node = [UInt8](repeating: 0xbb, count: 32)

    static func helloPayload(flags: UInt8 = 0, name: [UInt8] = []) -> [UInt8] {
        be16(1) + network + node + [flags] + be16(7411) + [UInt8(name.count)] + name
    }

    static func entry(_ byte: UInt8, _ sequence: UInt64) -> [UInt8] {
        [UInt8](repeating: byte, count: 32) + be64(sequence)
    }

    // MARK: - Frame header

    @Test("a huge length prefix is refused at once, before any of the body is buffered")
    func oversize() throws {
        for length: UInt32 in [UInt32(WireLimits.maxFrameBytes) + 1, 0x1000_0000, UInt32.max] {
            var decoder = FrameDecoder()
            decoder.append(be32(length))
            #expect(decoder.bufferedBytes <= 4)
            do throws(WireError) {
                _ = try decoder.next()
                Issue.record("no error")
            } catch {
                #expect(error.code == .frameTooLarge)
                #expect(error.message.contains("\(length)"))
                #expect(error.message.contains("\(WireLimits.maxFrameBytes)"))
            }
            // Whatever follows is not kept.
            decoder.append([UInt8](repeating: 0, count: 1 << 20))
            #expect(decoder.bufferedBytes <= 4)
        }
        Self.expectRefused(be32(UInt32(WireLimits.maxFrameBytes) + 1) + [1, 0x30], .frameTooLarge, "exceeds the limit")
    }

    @Test("a decoder's own limit")
    func customLimit() {
        let frame = WireCodec.encode(.ping(1))
        #expect(feed(frame, maxFrameBytes: 10).messages == [.ping(1)])
        let outcome = feed(frame, maxFrameBytes: 9)
        #expect(outcome.error == WireError(.frameTooLarge, "frame length 10 exceeds the limit of 9 bytes"))
    }

    @Test("a length under 2 is refused")
    func tooShort() {
        Self.expectRefused(be32(0), .malformedFrame, "frame length 0 is too short")
        Self.expectRefused(be32(1) + [1], .malformedFrame, "frame length 1 is too short")
    }

    @Test("an unknown frame version is refused")
    func badVersion() {
        Self.expectRefused(frame(type: 0x30, payload: be64(1), version: 2), .unsupportedVersion, "frame version 2")
        Self.expectRefused(frame(type: 0x30, payload: be64(1), version: 0), .unsupportedVersion, "frame version 0")
    }

    @Test(
        "an unknown message type below the optional range is refused",
        arguments: [0x00, 0x09, 0x0f, 0x18, 0x27, 0x32, 0x3f, 0x44, 0x7f] as [UInt8]
    )
    func unknownType(type: UInt8) {
        Self.expectRefused(frame(type: type, payload: []), .malformedFrame, "unknown message type")
        #expect(throws: WireError.self) { try WireCodec.decodePayload(type: type, payload: []) }
    }

    @Test(
        "a message of the optional range (0x80 … 0xff) is read whole and handed on as optional, whatever its payload",
        arguments: [0x80, 0x81, 0x99, 0xc3, 0xff] as [UInt8]
    )
    func optionalType(type: UInt8) throws {
        let payload: [UInt8] = [1, 2, 3, 0, 0xff]
        let bytes = frame(type: type, payload: payload) + WireCodec.encode(.ping(7))
        let fed = feed(bytes)
        #expect(fed.messages == [.optional(type: type, payload: payload), .ping(7)])
        #expect(fed.error == nil)
        #expect(feedBytewise(bytes).messages == fed.messages)
        // It encodes to the same frame, so tests (and later versions) can send one.
        #expect(WireCodec.encode(.optional(type: type, payload: payload)) == frame(type: type, payload: payload))
        #expect(WireMessage.optional(type: type, payload: []).typeName == "optional 0x\(String(type, radix: 16))")
        // Its length is checked like any frame's.
        var decoder = FrameDecoder(maxFrameBytes: 16)
        decoder.append(frame(type: type, payload: [UInt8](repeating: 0, count: 15)))
        #expect(throws: WireError.self) { try decoder.next() }
    }

    @Test("TLS handshake bytes at a plaintext node are refused with a clear message")
    func tlsClientHello() throws {
        // The start of a real TLS 1.3 ClientHello record: handshake (0x16), legacy version 3.1, length 0x00c8.
        let clientHello = hex("16 0301 00c8 01 0000c4 0303") + [UInt8](repeating: 0x5a, count: 200)
        let expected = WireError(
            .plaintextRefused,
            "the peer speaks TLS; this node runs with --insecure-plaintext (both sides must set it)"
        )
        #expect(feed(clientHello).error == expected)
        #expect(feedBytewise(clientHello).error == expected)
        // A TLS alert (a TLS server answering our plaintext HELLO) too.
        #expect(feed(hex("15 0303 0002 0228")).error == expected)

        var decoder = FrameDecoder()
        decoder.append([0x16])
        #expect(try decoder.next() == nil)
        decoder.append([0x03])
        #expect(throws: expected) { try decoder.next() }

        // Only the first frame is checked; later the same bytes are just an oversized length.
        let later = feed(WireCodec.encode(.ping(1)) + clientHello)
        #expect(later.messages == [.ping(1)])
        #expect(later.error?.code == .frameTooLarge)
    }

    @Test("after an error the decoder stays failed; frames before the bad one are delivered")
    func sticky() throws {
        var decoder = FrameDecoder()
        decoder.append(WireCodec.encode(.ping(1)) + WireCodec.encode(.pong(2)) + frame(type: 0x59, payload: []))
        #expect(try decoder.next() == .ping(1))
        #expect(try decoder.next() == .pong(2))
        #expect(throws: WireError.self) { try decoder.next() }
        decoder.append(WireCodec.encode(.ping(3)))
        #expect(decoder.bufferedBytes == 0)
        #expect(throws: WireError(.malformedFrame, "unknown message type 0x59")) { try decoder.next() }
    }

    // MARK: - Payloads

    @Test("every payload cut short is refused as truncated", arguments: Samples.messages)
    func truncated(message: WireMessage) {
        let bytes = WireCodec.encode(message)
        let payload = Array(bytes[6...])
        for keep in 0..<payload.count {
            Self.expectRefused(frame(type: bytes[5], payload: Array(payload[..<keep])), .malformedFrame, "truncated")
        }
    }

    @Test("every payload with a byte too many is refused for trailing bytes", arguments: Samples.messages)
    func trailing(message: WireMessage) {
        let bytes = WireCodec.encode(message)
        Self.expectRefused(frame(type: bytes[5], payload: Array(bytes[6...]) + [0]), .malformedFrame, "1 trailing byte")
        Self.expectRefused(
            frame(type: bytes[5], payload: Array(bytes[6...]) + [1, 2, 3]),
            .malformedFrame,
            "3 trailing bytes"
        )
    }

    @Test("HELLO: unknown flag bits")
    func helloFlags() {
        for flags: UInt8 in [0x02, 0x03, 0x80, 0xff] {
            Self.expectRefused(frame(type: 0x01, payload: Self.helloPayload(flags: flags)), .malformedFrame, "flags")
        }
    }

    @Test("HELLO: a name that is not valid UTF-8 or not a valid name")
    func helloName() {
        let cases: [([UInt8], String)] = [
            ([0xff], "not valid UTF-8"),
            ([0x41, 0xc3], "not valid UTF-8"),  // cut inside a character
            ([0xc0, 0x80], "not valid UTF-8"),  // overlong NUL
            ([0xed, 0xa0, 0x80], "not valid UTF-8"),  // encoded surrogate
            ([0xf4, 0x90, 0x80, 0x80], "not valid UTF-8"),  // above U+10FFFF
            (Array("a\nb".utf8), "control character U+000A"),
            (Array("\u{1B}[2J".utf8), "control character U+001B"),
            (Array("a\u{7F}".utf8), "control character U+007F"),
            (Array("  ".utf8), "blank"),
            ([UInt8](repeating: 0x61, count: 65), "65 bytes; the limit is 64"),
        ]
        for (name, fragment) in cases {
            Self.expectRefused(frame(type: 0x01, payload: Self.helloPayload(name: name)), .malformedFrame, fragment)
        }
    }

    @Test("ERROR: a message too long or not valid UTF-8")
    func errorMessage() {
        let long = [UInt8](repeating: 0x61, count: WireLimits.maxErrorMessageBytes + 1)
        Self.expectRefused(frame(type: 0x02, payload: be16(1) + be16(1025) + long), .malformedFrame, "1025 bytes")
        Self.expectRefused(frame(type: 0x02, payload: be16(1) + be16(1) + [0xfe]), .malformedFrame, "not valid UTF-8")
        Self.expectRefused(frame(type: 0x02, payload: be16(1) + be16(1) + [0x1b]), .malformedFrame, "U+001B")
    }

    @Test("CLOCK, CLOCK_SINCE and ACK: unsorted or repeated authors, sequence 0 or too high, too many entries")
    func clocks() {
        let cases: [([UInt8], String)] = [
            (be32(2) + Self.entry(2, 1) + Self.entry(1, 1), "strictly ascending"),
            (be32(2) + Self.entry(1, 1) + Self.entry(1, 2), "strictly ascending"),
            (be32(1) + Self.entry(1, 0), "sequence 0"),
            (be32(1) + Self.entry(1, Limits.maxSequence + 1), "sequence 9007199254740992"),
            (be32(1) + Self.entry(1, UInt64.max), "must be 1 ... 9007199254740991"),
            (be32(UInt32(WireLimits.maxClockEntries) + 1), "100001 clock entries"),
            (be32(UInt32.max), "clock entries; the limit is 100000"),
            (be32(3) + Self.entry(1, 1), "truncated"),
        ]
        for (entries, fragment) in cases {
            Self.expectRefused(frame(type: 0x10, payload: be32(1) + entries), .malformedFrame, fragment)
            Self.expectRefused(frame(type: 0x13, payload: entries), .malformedFrame, fragment)
            Self.expectRefused(
                frame(type: 0x16, payload: be32(1) + [UInt8](repeating: 0xab, count: 32) + entries),
                .malformedFrame,
                fragment
            )
        }
        // CLOCK_SINCE cut inside its base.
        Self.expectRefused(frame(type: 0x16, payload: be32(1) + [1, 2, 3]), .malformedFrame, "truncated")
    }

    @Test("RECORDS: count 0 or over 1000, a record empty or over 16 KiB, a batch over 1 MiB, live not 0 or 1")
    func records() {
        func records(_ lengths: [Int], count: Int? = nil, live: UInt8 = 0) -> [UInt8] {
            var payload = [live] + be16(UInt16(count ?? lengths.count))
            for length in lengths { payload += be32(UInt32(length)) + [UInt8](repeating: 7, count: length) }
            return frame(type: 0x12, payload: payload)
        }
        Self.expectRefused(records([]), .malformedFrame, "0 records")
        Self.expectRefused(records([1], count: 1001), .malformedFrame, "1001 records")
        Self.expectRefused(records(Array(repeating: 1, count: 1001)), .malformedFrame, "1001 records")
        Self.expectRefused(records([0]), .malformedFrame, "record 0 is 0 bytes")
        Self.expectRefused(records([5, 16_385]), .malformedFrame, "record 1 is 16385 bytes")
        Self.expectRefused(records(Array(repeating: 16_384, count: 65)), .malformedFrame, "more than 1048576 bytes")
        Self.expectRefused(records([4], live: 2), .malformedFrame, "live is 2")
        // A length that points past the end of the frame.
        Self.expectRefused(
            frame(type: 0x12, payload: [0] + be16(1) + be32(100) + [1, 2, 3]),
            .malformedFrame,
            "truncated at record"
        )
    }

    @Test("INTEREST: unknown flags, over 4096 entries, posts out of order, hops over 8, a withdrawal that replaces")
    func interest() {
        func interest(_ entries: [(UInt8, UInt8)], flags: UInt8 = 0, count: Int? = nil) -> [UInt8] {
            var payload = [flags] + be16(UInt16(count ?? entries.count))
            for (post, hops) in entries { payload += [UInt8](repeating: post, count: 32) + [hops] }
            return frame(type: 0x40, payload: payload)
        }
        #expect(feed(interest([(1, 0), (2, 8), (3, 0xFF)])).error == nil)
        Self.expectRefused(interest([(1, 0)], flags: 2), .malformedFrame, "flags 0x2")
        Self.expectRefused(interest([(1, 0)], count: 4097), .malformedFrame, "4097 entries")
        Self.expectRefused(interest([(2, 0), (1, 0)]), .malformedFrame, "entry 1: posts must be in strictly ascending")
        Self.expectRefused(interest([(1, 0), (1, 1)]), .malformedFrame, "strictly ascending")
        Self.expectRefused(interest([(1, 9)]), .malformedFrame, "entry 0: hops 9 must be 0 ... 8")
        Self.expectRefused(interest([(1, 0xFF)], flags: 1), .malformedFrame, "a replacing INTEREST cannot withdraw")
        Self.expectRefused(interest([(1, 0)], count: 2), .malformedFrame, "truncated")
    }

    @Test("PUSH: the same rules as RECORDS, with no live byte")
    func push() {
        func push(_ lengths: [Int], count: Int? = nil) -> [UInt8] {
            var payload = be16(UInt16(count ?? lengths.count))
            for length in lengths { payload += be32(UInt32(length)) + [UInt8](repeating: 7, count: length) }
            return frame(type: 0x41, payload: payload)
        }
        #expect(feed(push([3, 4])).messages == [.push([[7, 7, 7], [7, 7, 7, 7]])])
        Self.expectRefused(push([]), .malformedFrame, "0 records")
        Self.expectRefused(push([1], count: 1001), .malformedFrame, "1001 records")
        Self.expectRefused(push([0]), .malformedFrame, "record 0 is 0 bytes")
        Self.expectRefused(push([16_385]), .malformedFrame, "record 0 is 16385 bytes")
        Self.expectRefused(push(Array(repeating: 16_384, count: 65)), .malformedFrame, "more than 1048576 bytes")
    }

    @Test("REQUEST: count 0 or over 10,000, ranges out of order or out of bounds")
    func requests() {
        func request(_ ranges: [(UInt64, UInt64)], count: Int? = nil) -> [UInt8] {
            var payload = be32(UInt32(count ?? ranges.count))
            for (from, through) in ranges { payload += [UInt8](repeating: 3, count: 32) + be64(from) + be64(through) }
            return frame(type: 0x14, payload: payload)
        }
        Self.expectRefused(request([]), .malformedFrame, "0 ranges")
        Self.expectRefused(request([(1, 1)], count: 10_001), .malformedFrame, "10001 ranges")
        Self.expectRefused(request([(0, 5)]), .malformedFrame, "range 0 is 0 ... 5")
        Self.expectRefused(request([(1, 2), (6, 5)]), .malformedFrame, "range 1 is 6 ... 5")
        Self.expectRefused(request([(1, Limits.maxSequence + 1)]), .malformedFrame, "range 0")
        Self.expectRefused(request([(1, 1)], count: 2), .malformedFrame, "truncated")
    }

    @Test("HAVE: the rules of REQUEST (count 0 or over 10,000, ranges out of bounds)")
    func have() {
        func have(_ ranges: [(UInt64, UInt64)], count: Int? = nil) -> [UInt8] {
            var payload = be32(UInt32(count ?? ranges.count))
            for (from, through) in ranges { payload += [UInt8](repeating: 3, count: 32) + be64(from) + be64(through) }
            return frame(type: 0x42, payload: payload)
        }
        #expect(
            feed(have([(1, 3), (5, 5)])).messages == [
                .have([LogRange(author: author(3), range: 1...3), LogRange(author: author(3), range: 5...5)])
            ]
        )
        Self.expectRefused(have([]), .malformedFrame, "HAVE: 0 ranges; a frame holds 1 ... 10000")
        Self.expectRefused(have([(1, 1)], count: 10_001), .malformedFrame, "10001 ranges")
        Self.expectRefused(
            have([(0, 5)]),
            .malformedFrame,
            "HAVE: range 0 is 0 ... 5; it must satisfy 1 <= from <= through <= 9007199254740991"
        )
        Self.expectRefused(have([(1, 2), (6, 5)]), .malformedFrame, "range 1 is 6 ... 5")
        Self.expectRefused(have([(1, Limits.maxSequence + 1)]), .malformedFrame, "range 0")
        Self.expectRefused(have([(1, 1)], count: 2), .malformedFrame, "truncated")
    }

    @Test("TREE: mode 0 (prune) or 1 (graft), one byte and nothing more")
    func tree() {
        #expect(feed(frame(type: 0x43, payload: [0])).messages == [.tree(eager: false)])
        #expect(feed(frame(type: 0x43, payload: [1])).messages == [.tree(eager: true)])
        Self.expectRefused(
            frame(type: 0x43, payload: [2]),
            .malformedFrame,
            "TREE: mode is 2; it must be 0 (prune) or 1 (graft)"
        )
        Self.expectRefused(frame(type: 0x43, payload: [0xff]), .malformedFrame, "mode is 255")
        Self.expectRefused(frame(type: 0x43, payload: []), .malformedFrame, "TREE: truncated at mode")
        Self.expectRefused(frame(type: 0x43, payload: [1, 0]), .malformedFrame, "TREE: 1 trailing byte")
        // A bad mode is refused before the bytes after it are looked at.
        Self.expectRefused(frame(type: 0x43, payload: [2, 0]), .malformedFrame, "mode is 2")
    }

    @Test("FOLLOWS (0x88): entries of post, state and time; a bad state, time or count is refused, not ignored")
    func follows() {
        let post = [UInt8](repeating: 0x5c, count: 32)
        let entry = post + [1] + be64(1_700_000_000_000)
        #expect(
            feed(frame(type: 0x88, payload: be16(1) + entry)).messages == [
                .follows([
                    FollowEntry(
                        post: PostID(unchecked: Data(post)),
                        following: true,
                        changedAt: Timestamp(milliseconds: 1_700_000_000_000)
                    )
                ])
            ]
        )
        #expect(feed(frame(type: 0x88, payload: be16(0))).messages == [.follows([])])
        Self.expectRefused(
            frame(type: 0x88, payload: be16(1) + post + [2] + be64(1)),
            .malformedFrame,
            "FOLLOWS: state is 2; it must be 0 or 1"
        )
        Self.expectRefused(
            frame(type: 0x88, payload: be16(1) + post + [0] + be64(1 << 53)),
            .malformedFrame,
            "FOLLOWS: changed-at 9007199254740992 is over 2^53 - 1"
        )
        Self.expectRefused(frame(type: 0x88, payload: be16(1001)), .malformedFrame, "1001 entries; the limit is 1000")
        Self.expectRefused(frame(type: 0x88, payload: be16(2) + entry), .malformedFrame, "FOLLOWS: truncated at post")
    }

    @Test("PHOTO_DATA: chunk empty or over 256 KiB, past the largest photo, shorter than its length, bytes left over")
    func photoData() {
        func data(offset: UInt64, chunk: [UInt8], length: Int? = nil) -> [UInt8] {
            let payload = [UInt8](repeating: 1, count: 32) + be64(offset) + be32(UInt32(length ?? chunk.count)) + chunk
            return frame(type: 0x21, payload: payload)
        }
        Self.expectRefused(data(offset: 0, chunk: []), .malformedFrame, "chunk is 0 bytes")
        let big = [UInt8](repeating: 9, count: WireLimits.photoChunkBytes + 1)
        Self.expectRefused(data(offset: 0, chunk: big), .malformedFrame, "chunk is 262145 bytes")
        Self.expectRefused(data(offset: Limits.photoBytes, chunk: [1]), .malformedFrame, "beyond the largest photo")
        Self.expectRefused(data(offset: UInt64.max, chunk: [1]), .malformedFrame, "beyond the largest photo")
        Self.expectRefused(data(offset: 0, chunk: [1, 2], length: 3), .malformedFrame, "truncated at chunk")
        Self.expectRefused(data(offset: 0, chunk: [1, 2], length: 1), .malformedFrame, "trailing")
        #expect(feed(data(offset: Limits.photoBytes - 2, chunk: [1, 2])).messages.count == 1)
    }

    @Test("THUMB_DATA: empty, over 64 KiB, shorter than its length, bytes left over; THUMB_WANT without a whole hash")
    func thumbData() {
        let hash = [UInt8](repeating: 1, count: 32)
        func data(_ bytes: [UInt8], length: Int? = nil) -> [UInt8] {
            frame(type: 0x25, payload: hash + be32(UInt32(length ?? bytes.count)) + bytes)
        }
        Self.expectRefused(data([]), .malformedFrame, "thumbnail is 0 bytes")
        let big = [UInt8](repeating: 9, count: WireLimits.maxThumbnailBytes + 1)
        Self.expectRefused(data(big), .malformedFrame, "thumbnail is 65537 bytes")
        Self.expectRefused(data([1, 2], length: 3), .malformedFrame, "truncated at thumbnail")
        Self.expectRefused(data([1, 2], length: 1), .malformedFrame, "1 trailing byte")
        Self.expectRefused(frame(type: 0x24, payload: Array(hash.prefix(31))), .malformedFrame, "truncated at hash")
        Self.expectRefused(frame(type: 0x26, payload: hash + [0]), .malformedFrame, "1 trailing byte")
        #expect(feed(data([UInt8](repeating: 7, count: WireLimits.maxThumbnailBytes))).messages.count == 1)
        #expect(throws: WireError.self) { try WireCodec.validate(.thumbData(AssetHash.of(Data()), [])) }
    }

    @Test("PHOTO_WANT and PHOTO_END: offsets and sizes beyond the largest photo")
    func photoBounds() {
        let hash = [UInt8](repeating: 1, count: 32)
        Self.expectRefused(frame(type: 0x20, payload: hash + be64(Limits.photoBytes + 1)), .malformedFrame, "offset")
        Self.expectRefused(frame(type: 0x22, payload: hash + be64(0)), .malformedFrame, "total bytes 0")
        Self.expectRefused(
            frame(type: 0x22, payload: hash + be64(Limits.photoBytes + 1)),
            .malformedFrame,
            "total bytes 1073741825"
        )
    }

    @Test("validate refuses what the decoder refuses")
    func validate() {
        let bad: [WireMessage] = [
            .records(live: false, []),
            .records(live: false, [[]]),
            .records(live: false, Array(repeating: [1], count: 1001)),
            .records(live: false, Array(repeating: [UInt8](repeating: 0, count: 16_384), count: 65)),
            .request([]),
            .request([LogRange(author: author(1), range: 0...3)]),
            .have([]),
            .have([LogRange(author: author(1), range: 0...3)]),
            .have(Array(repeating: LogRange(author: author(1), range: 1...1), count: WireLimits.maxRanges + 1)),
            .clock(round: 0, VectorClock([author(1): Limits.maxSequence + 1])),
            .photoData(asset(1), offset: 0, chunk: []),
            .photoData(asset(1), offset: Limits.photoBytes, chunk: [1]),
            .photoWant(asset(1), offset: Limits.photoBytes + 1),
            .photoEnd(asset(1), totalBytes: 0),
            .hello(Hello(nonce: .testNonce, node: author(1), name: "")),
            .hello(Hello(nonce: .testNonce, node: author(1), name: "a\u{0}")),
            .error(WireError(.internal, String(repeating: "x", count: 1025))),
            .push([]),
            .push([[]]),
            .interest(replace: false, [PostInterest(post: post(1), hops: 9)]),
            .interest(replace: true, [PostInterest(post: post(1), hops: nil)]),
            .interest(replace: false, [PostInterest(post: post(1), hops: 0), PostInterest(post: post(1), hops: 1)]),
            .interest(replace: false, (0..<4097).map { PostInterest(post: post(number: $0), hops: 0) }),
        ]
        for message in bad {
            #expect(throws: WireError.self, "\(message.typeName)") { try WireCodec.validate(message) }
        }
    }
}
