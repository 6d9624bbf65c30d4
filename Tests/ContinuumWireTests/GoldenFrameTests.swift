import ContinuumCore
import ContinuumWire
import Testing

/// Frames written out by hand, field by field, from Docs/PROTOCOL.md §7; not produced by the encoder.
@Suite("Golden frames")
struct GoldenFrameTests {
    struct Golden: Sendable, CustomTestStringConvertible {
        var message: WireMessage
        var hex: String
        var testDescription: String { message.typeName }
    }

    static let goldens: [Golden] = [
        // length 10 | version 1 | PING | nonce 1
        Golden(message: .ping(1), hex: "0000000a 01 30 0000000000000001"),
        Golden(message: .pong(0xdead_beef), hex: "0000000a 01 31 00000000deadbeef"),
        // length 6 | version 1 | DONE | round 7
        Golden(message: .done(round: 7), hex: "00000006 01 15 00000007"),
        // length 22 | OFFER | round 2 | 3 records | 4096 bytes
        Golden(
            message: .offer(round: 2, records: 3, bytes: 4096),
            hex: "00000016 01 11 00000002 0000000000000003 0000000000001000"
        ),
        // length 75 | HELLO | protocol 3 | nonce aa… | node bb… | flags: plaintext | port 7411 | name "Ann"
        Golden(
            message: .hello(
                Hello(
                    nonce: SessionNonce(bytes: [UInt8](repeating: 0xaa, count: 32))!,
                    node: author(0xbb),
                    name: "Ann",
                    listenPort: 7411,
                    plaintext: true
                )
            ),
            hex: "0000004b 01 01 0003 \(repeated("aa", 32)) \(repeated("bb", 32)) 01 1cf3 03 416e6e"
        ),
        // The same HELLO from a node of version 2: the layout every version keeps (PROTOCOL.md §7.4.1).
        Golden(
            message: .hello(
                Hello(
                    protocolVersion: 2,
                    nonce: SessionNonce(bytes: [UInt8](repeating: 0xaa, count: 32))!,
                    node: author(0xbb),
                    name: "Ann",
                    listenPort: 7411,
                    plaintext: true
                )
            ),
            hex: "0000004b 01 01 0002 \(repeated("aa", 32)) \(repeated("bb", 32)) 01 1cf3 03 416e6e"
        ),
        // length 72 | HELLO | protocol 1 (any version is well formed; the session refuses it) | no flags | not
        // listening | no name
        Golden(
            message: .hello(
                Hello(
                    protocolVersion: 1,
                    nonce: SessionNonce(bytes: [UInt8](repeating: 0xaa, count: 32))!,
                    node: author(0xbb)
                )
            ),
            hex: "00000048 01 01 0001 \(repeated("aa", 32)) \(repeated("bb", 32)) 00 0000 00"
        ),
        // The HELLO example of Docs/PROTOCOL.md §7.7: identity A of the test vectors, with a fixed nonce.
        Golden(
            message: .hello(
                Hello(
                    nonce: SessionNonce(
                        bytes: Array(Hex.decode("f83a6b087032c223211534c5bde190784da595cd1d51cc1c0e664d4eecd77ebd")!)
                    )!,
                    node: AuthorID(hex: "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8")!,
                    name: "Alice",
                    listenPort: 7411
                )
            ),
            hex: """
                0000004d 01 01 0003
                f83a6b087032c223211534c5bde190784da595cd1d51cc1c0e664d4eecd77ebd
                03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8
                00 1cf3 05 416c696365
                """
        ),
        // The PING example of Docs/PROTOCOL.md §7.7.
        Golden(message: .ping(0x0123_4567_89ab_cdef), hex: "0000000a 01 30 0123456789abcdef"),
        // length 19 | ERROR | code 4 | 13 bytes "wrong network"
        Golden(
            message: .error(WireError(.wrongNetwork, "wrong network")),
            hex: "00000013 01 02 0004 000d 77726f6e67206e6574776f726b"
        ),
        // length 90 | CLOCK | round 1 | 2 entries, ascending: 11… seq 3, 22… seq 5
        Golden(
            message: .clock(round: 1, VectorClock([author(0x22): 5, author(0x11): 3])),
            hex: """
                0000005a 01 10 00000001 00000002
                \(repeated("11", 32)) 0000000000000003
                \(repeated("22", 32)) 0000000000000005
                """
        ),
        // length 6 | ACK | 0 entries
        Golden(message: .ack(VectorClock()), hex: "00000006 01 13 00000000"),
        // length 16 | RECORDS | live | 2 records: dead, 01
        Golden(
            message: .records(live: true, [[0xde, 0xad], [0x01]]),
            hex: "00000010 01 12 01 0002 00000002 dead 00000001 01"
        ),
        // length 54 | REQUEST | 1 range | author 33… | from 2 | through 9
        Golden(
            message: .request([LogRange(author: author(0x33), range: 2...9)]),
            hex: "00000036 01 14 00000001 \(repeated("33", 32)) 0000000000000002 0000000000000009"
        ),
        // length 42 | PHOTO_WANT | hash 01… | offset 256
        Golden(
            message: .photoWant(asset(0x01), offset: 256),
            hex: "0000002a 01 20 \(repeated("01", 32)) 0000000000000100"
        ),
        // length 49 | PHOTO_DATA | hash 01… | offset 0 | 3 bytes "abc" (no checksum of the chunk: §7.4.10)
        Golden(
            message: .photoData(asset(0x01), offset: 0, chunk: Array("abc".utf8)),
            hex: "00000031 01 21 \(repeated("01", 32)) 0000000000000000 00000003 616263"
        ),
        // length 42 | PHOTO_END | hash 01… | 3 bytes in all
        Golden(
            message: .photoEnd(asset(0x01), totalBytes: 3),
            hex: "0000002a 01 22 \(repeated("01", 32)) 0000000000000003"
        ),
        // length 34 | PHOTO_MISSING | hash 01…
        Golden(message: .photoMissing(asset(0x01)), hex: "00000022 01 23 \(repeated("01", 32))"),
        // length 34 | THUMB_WANT | hash 01…
        Golden(message: .thumbWant(asset(0x01)), hex: "00000022 01 24 \(repeated("01", 32))"),
        // length 42 | THUMB_DATA | hash 01… | 4 bytes: FF D8 FF D9 (the test vector of Docs/PROTOCOL.md §7.4)
        Golden(
            message: .thumbData(asset(0x01), [0xFF, 0xD8, 0xFF, 0xD9]),
            hex: "0000002a 01 25 \(repeated("01", 32)) 00000004 ffd8ffd9"
        ),
        // length 34 | THUMB_MISSING | hash 01…
        Golden(message: .thumbMissing(asset(0x01)), hex: "00000022 01 26 \(repeated("01", 32))"),
        // length 71 | INTEREST | replace | 2 entries, ascending: 11… 0 hops, 22… 3 hops
        Golden(
            message: .interest(
                replace: true,
                [PostInterest(post: post(0x11), hops: 0), PostInterest(post: post(0x22), hops: 3)]
            ),
            hex: "00000047 01 40 01 0002 \(repeated("11", 32)) 00 \(repeated("22", 32)) 03"
        ),
        // length 38 | INTEREST | a change | 1 entry: 33… withdrawn
        Golden(
            message: .interest(replace: false, [PostInterest(post: post(0x33), hops: nil)]),
            hex: "00000026 01 40 00 0001 \(repeated("33", 32)) ff"
        ),
        // length 82 | CLOCK_SINCE | round 4 | base: the digest of the empty clock | 1 entry: 11… seq 7
        Golden(
            message: .clockSince(
                round: 4,
                base: ClockDigest(bytes: hex("df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119"))!,
                VectorClock([author(0x11): 7])
            ),
            hex: """
                00000052 01 16 00000004
                df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119 00000001
                \(repeated("11", 32)) 0000000000000007
                """
        ),
        // length 6 | CLOCK_UNKNOWN | round 4
        Golden(message: .clockUnknown(round: 4), hex: "00000006 01 17 00000004"),
        // length 10 | PUSH | 1 record: dead
        Golden(message: .push([[0xde, 0xad]]), hex: "0000000a 01 41 0001 00000002 dead"),
        // length 102 (2 + 4 + 2 × 48) | HAVE | 2 ranges | author 11… from 1 through 3 | author 22… from 5 through 5
        // (Docs/PROTOCOL.md §7.4.23)
        Golden(
            message: .have([
                LogRange(author: author(0x11), range: 1...3), LogRange(author: author(0x22), range: 5...5),
            ]),
            hex: """
                00000066 01 42 00000002
                \(repeated("11", 32)) 0000000000000001 0000000000000003
                \(repeated("22", 32)) 0000000000000005 0000000000000005
                """
        ),
        // length 3 | TREE | mode 0: prune (Docs/PROTOCOL.md §7.4.24)
        Golden(message: .tree(eager: false), hex: "00000003 01 43 00"),
        // length 3 | TREE | mode 1: graft
        Golden(message: .tree(eager: true), hex: "00000003 01 43 01"),
    ]

    @Test("clock digests: SHA-256 of the clock's encoding (Docs/PROTOCOL.md §7.4.16)")
    func clockDigests() {
        #expect(
            WireCodec.clockDigest(VectorClock()).bytes
                == hex("df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119")
        )
        #expect(
            WireCodec.clockDigest(VectorClock([author(0x22): 5, author(0x11): 3])).bytes
                == hex("9644ea14f041a47585f02f76f74e2c42d5cc207b2519ba22a0d57d379699bf40")
        )
        let clock = VectorClock([author(1): 9, author(0xfe): Limits.maxSequence])
        #expect(try! WireCodec.clock(from: WireCodec.clockBytes(clock)) == clock)
        #expect(throws: WireError.self) { try WireCodec.clock(from: WireCodec.clockBytes(clock) + [0]) }
    }

    @Test("encoding gives the hand-written bytes", arguments: goldens)
    func encode(golden: Golden) {
        #expect(Hex.encode(WireCodec.encode(golden.message)) == Hex.encode(hex(golden.hex)))
    }

    @Test("decoding the hand-written bytes gives the message", arguments: goldens)
    func decode(golden: Golden) {
        let outcome = feed(hex(golden.hex))
        #expect(outcome.error == nil)
        #expect(outcome.messages == [golden.message])
        #expect(outcome.leftover == 0)
    }
}
