import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation

/// A record for the rules alone: its bytes are its index in ``Universe``, so that no signing is needed.
struct TestRecord: SessionRecord {
    let ref: RecordRef
    let bytes: [UInt8]
}

typealias Machine = SessionMachine<TestRecord>

/// Ids and records made from small numbers, the same in every run.
enum Fixture {
    static func id32(_ index: Int, tag: UInt8) -> Data {
        var bytes = [UInt8](repeating: 0, count: 32)
        bytes[0] = tag
        withUnsafeBytes(of: UInt64(index).bigEndian) { bytes.replaceSubrange(1..<9, with: $0) }
        return Data(bytes)
    }

    static func author(_ index: Int) -> AuthorID { AuthorID(unchecked: id32(index, tag: 1)) }
    static func post(_ index: Int) -> PostID { PostID(unchecked: id32(index, tag: 2)) }
    static func hash(_ index: Int) -> AssetHash { AssetHash(unchecked: id32(index, tag: 3)) }

    /// The record of `author` at `sequence`: its id and bytes both say which it is.
    static func record(_ author: Int, _ sequence: UInt64) -> TestRecord {
        var id = id32(author, tag: 4)
        withUnsafeBytes(of: sequence.bigEndian) { id.replaceSubrange(9..<17, with: $0) }
        let ref = RecordRef(id: RecordID(unchecked: id), author: self.author(author), sequence: sequence)
        return TestRecord(ref: ref, bytes: [UInt8](id))
    }

    /// The record that `bytes` (made by ``record(_:_:)``) stand for.
    static func decode(_ bytes: [UInt8]) -> TestRecord? {
        guard bytes.count == 32, bytes[0] == 4 else { return nil }
        let author = bytes[1..<9].reduce(0) { $0 << 8 | Int($1) }
        let sequence = bytes[9..<17].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return record(author, sequence)
    }

    static func outgoing(_ record: TestRecord) -> OutgoingRecord { OutgoingRecord(record.ref, bytes: record.bytes) }

    static let peer = author(900)
    static let clock = VectorClock([author(1): 3, author(2): 5])

    /// One message of each type, as a peer might send it.
    static let everyMessage: [(name: String, message: WireMessage)] = [
        ("HELLO", .hello(Hello(nonce: .random(), node: peer))),
        ("ERROR", .error(WireError(.internal, "boom"))),
        ("PING", .ping(7)),
        ("PONG", .pong(7)),
        ("CLOCK", .clock(round: 1, clock)),
        ("CLOCK_SINCE", .clockSince(round: 2, base: WireCodec.clockDigest(VectorClock([author(7): 1])), clock)),
        ("CLOCK_UNKNOWN", .clockUnknown(round: 9)),
        ("OFFER", .offer(round: 1, records: 10, bytes: 1000)),
        ("RECORDS", .records(live: false, [record(1, 1).bytes])),
        ("RECORDS live", .records(live: true, [record(1, 1).bytes])),
        ("PUSH", .push([record(1, 1).bytes])),
        ("ACK", .ack(clock)),
        ("REQUEST", .request([LogRange(author: author(1), range: 1...3)])),
        ("DONE", .done(round: 1)),
        ("INTEREST", .interest(replace: true, [PostInterest(post: post(1), hops: 0)])),
        ("PHOTO_WANT", .photoWant(hash(1), offset: 0)),
        ("PHOTO_DATA", .photoData(hash(1), offset: 0, chunk: [1, 2, 3])),
        ("PHOTO_END", .photoEnd(hash(1), totalBytes: 3)),
        ("PHOTO_MISSING", .photoMissing(hash(1))),
        ("THUMB_WANT", .thumbWant(hash(1))),
        ("THUMB_DATA", .thumbData(hash(1), [0xFF, 0xD8])),
        ("THUMB_MISSING", .thumbMissing(hash(1))),
        ("PHOTOS_WANT", .photosWant([hash(1), hash(2)])),
        ("PHOTOS", .photos([SmallPhoto(hash: hash(1), bytes: [1, 2, 3])])),
        ("HAVE", .have([LogRange(author: author(1), range: 1...2)])),
        ("TREE prune", .tree(eager: false)),
        ("TREE graft", .tree(eager: true)),
        // A type of the optional range that this version does not define: ignored once charged (§7.3).
        ("optional 0x9c", .optional(type: 0x9c, payload: [1, 2, 3])),
    ]
}

extension SessionAction {
    /// The ERROR this action closes with, if it is a close.
    var closeCode: WireError.Code? {
        if case .close(let error) = self { error.code } else { nil }
    }
}
