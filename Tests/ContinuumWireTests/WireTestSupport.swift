import ContinuumCore
import ContinuumWire
import Foundation

/// Bytes from hex digits; spaces and line breaks are ignored, so that golden frames can be laid out field by field.
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    return [UInt8](Hex.decode(digits)!)
}

/// `count` copies of one byte, as hex.
func repeated(_ byte: String, _ count: Int) -> String { String(repeating: byte, count: count) }

/// An author id made of 32 copies of one byte.
func author(_ byte: UInt8) -> AuthorID { AuthorID(bytes: [UInt8](repeating: byte, count: 32))! }

/// An asset hash made of 32 copies of one byte.
func post(_ byte: UInt8) -> PostID { PostID(bytes: [UInt8](repeating: byte, count: 32))! }
/// A different post for each number (its first two bytes), in ascending order.
func post(number: Int) -> PostID {
    PostID(bytes: [UInt8(number >> 8), UInt8(number & 0xFF)] + [UInt8](repeating: 0, count: 30))!
}
func asset(_ byte: UInt8) -> AssetHash { AssetHash(bytes: [UInt8](repeating: byte, count: 32))! }

/// A frame put together by hand: length prefix, version, type and payload, with no checks.
func frame(type: UInt8, payload: [UInt8], version: UInt8 = 1) -> [UInt8] {
    let length = UInt32(payload.count + 2)
    return withUnsafeBytes(of: length.bigEndian, Array.init) + [version, type] + payload
}

func be16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
func be64(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }

/// What feeding bytes to a fresh decoder gives: the messages, then the error that stopped it, if any.
struct Outcome: Equatable {
    var messages: [WireMessage] = []
    var error: WireError?
    /// Bytes appended but not decoded when the stream ended (0 after an error).
    var leftover = 0
}

/// Feeds the bytes in the given pieces (all at once by default), taking every message after each piece.
func feed(_ bytes: [UInt8], pieces: [Int]? = nil, maxFrameBytes: Int = WireLimits.maxFrameBytes) -> Outcome {
    var decoder = FrameDecoder(maxFrameBytes: maxFrameBytes)
    var outcome = Outcome()
    var offset = 0
    for size in pieces ?? [bytes.count] {
        decoder.append(bytes[offset..<offset + size])
        offset += size
        do throws(WireError) {
            while let message = try decoder.next() { outcome.messages.append(message) }
        } catch {
            outcome.error = error
            return outcome
        }
    }
    outcome.leftover = decoder.bufferedBytes
    return outcome
}

/// Feeds the bytes one at a time.
func feedBytewise(_ bytes: [UInt8]) -> Outcome { feed(bytes, pieces: Array(repeating: 1, count: bytes.count)) }

/// Messages of every type, with ordinary values.
enum Samples {
    static let hello = Hello(
        nonce: .testNonce,
        node: author(0x0b),
        name: "Alice — Café",
        listenPort: 7411,
        plaintext: false
    )

    static let messages: [WireMessage] = [
        .hello(hello),
        .hello(Hello(protocolVersion: 9, nonce: .testNonce, node: author(0xfe), listenPort: 0, plaintext: true)),
        .error(WireError(.wrongNetwork, "this node is on network f83a6b087032; you are on 5d1ffbd0c0a8")),
        .error(WireError(WireError.Code(rawValue: 999), "")),
        .clock(round: 3, VectorClock([author(1): 5, author(2): 1, author(0xff): Limits.maxSequence])),
        .clock(round: 0, VectorClock()),
        .offer(round: 3, records: 1234, bytes: 5_678_901),
        .records(live: false, [[0x43, 0x4e, 0x54, 0x4d], Array(repeating: 7, count: 300)]),
        .records(live: true, [[1]]),
        .ack(VectorClock([author(9): 42])),
        .ack(VectorClock()),
        .request([
            LogRange(author: author(1), range: 1...1), LogRange(author: author(2), range: 6...Limits.maxSequence),
        ]),
        .done(round: UInt32.max),
        .photoWant(asset(0xaa), offset: 0),
        .photoWant(asset(0xab), offset: 262_144),
        .photoData(asset(0xaa), offset: 0, chunk: Array("hello photo".utf8)),
        .photoEnd(asset(0xaa), totalBytes: 66_373),
        .photoMissing(asset(0xac)),
        .thumbWant(asset(0xad)),
        .thumbData(asset(0xad), [0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: 0x42, count: 300)),
        .thumbData(asset(0xae), Array(repeating: 1, count: 1000)),
        .thumbMissing(asset(0xaf)),
        .ping(0),
        .pong(UInt64.max),
        .interest(replace: true, [PostInterest(post: post(0x01), hops: 0), PostInterest(post: post(0x02), hops: 8)]),
        .interest(replace: true, []),
        .interest(
            replace: false,
            [PostInterest(post: post(0x03), hops: nil), PostInterest(post: post(0x04), hops: 1)]
        ),
        .push([[0x43, 0x4e, 0x54, 0x4d], Array(repeating: 9, count: 200)]),
        .clockSince(
            round: 9,
            base: ClockDigest(bytes: Array(repeating: 0x5c, count: 32))!,
            VectorClock([author(3): 4, author(4): 1])
        ),
        .clockSince(round: 0, base: ClockDigest(bytes: Array(repeating: 0, count: 32))!, VectorClock()),
        .clockUnknown(round: 9),
        .have([
            LogRange(author: author(1), range: 1...3),
            LogRange(author: author(2), range: Limits.maxSequence...Limits.maxSequence),
        ]),
        .tree(eager: false),
        .tree(eager: true),
    ]
}

extension SessionNonce {
    /// A fixed nonce for tests: 32 bytes of 0x5a.
    static let testNonce = SessionNonce(bytes: [UInt8](repeating: 0x5a, count: 32))!
}
