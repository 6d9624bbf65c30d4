import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// A store in memory: records with row ids, a clock, a membership view; the rest empty. Every `ingest` is kept.
private actor HeldTestStore: SyncStorage {
    private var stored: [StoredRecord] = []
    private let view: MembershipView
    /// The records of every `ingest`, in order.
    private(set) var ingested: [[VerifiedRecord]] = []

    init(view: MembershipView) { self.view = view }

    /// Holds `bytes` as the record of `author` at `sequence`, unchecked (as if stored long ago).
    func hold(_ bytes: [UInt8], id: RecordID, author: AuthorID, sequence: UInt64) {
        stored.append(
            StoredRecord(rowid: Int64(stored.count + 1), id: id, author: author, sequence: sequence, bytes: bytes)
        )
    }

    func clock() -> VectorClock {
        var heads: [AuthorID: UInt64] = [:]
        for record in stored where record.sequence == heads[record.author, default: 0] + 1 {
            heads[record.author] = record.sequence
        }
        return VectorClock(heads)
    }

    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) -> (records: UInt64, bytes: UInt64) { (0, 0) }

    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    )
        -> [StoredRecord]
    {
        Array(stored.filter { $0.author == author && range.contains($0.sequence) }.prefix(limit))
    }

    func records(after rowid: Int64, limit: Int) -> [StoredRecord] {
        Array(stored.filter { $0.rowid > rowid }.prefix(limit))
    }

    func lastRecordRowid() -> Int64 { stored.last?.rowid ?? 0 }
    nonisolated func writeStamp() -> [Int]? { nil }

    func ingest(_ batch: StoreBatch<VerifiedRecord>) async -> Ingested {
        ingested.append(batch.records)
        var new: [RecordID] = []
        for record in batch.records where !stored.contains(where: { $0.id == record.id }) {
            let header = record.header
            stored.append(
                StoredRecord(
                    rowid: Int64(stored.count + 1),
                    id: record.id,
                    author: header.author,
                    sequence: header.sequence,
                    bytes: record.bytes
                )
            )
            new.append(record.id)
        }
        return Ingested(stored: new, forks: [], brokeRules: [:], clock: clock())
    }

    func peerClocks(_ peer: AuthorID) -> (sent: [UInt8]?, received: [UInt8]?) { (nil, nil) }
    func setPeerClock(_ peer: AuthorID, sent: [UInt8]?, received: [UInt8]?) {}
    func rememberPeer(_ peer: AuthorID, name: String?, host: String, port: Int, state: String) {}
    func updatePeer(_ peer: AuthorID, state: String, stats: SessionStats) {}
    func followedPosts() -> Set<PostID> { [] }
    func notifications(after id: Int64) -> [NotificationSummary] { [] }
    func lastNotificationID() -> Int64 { 0 }
    func missingPhotos(limit: Int) -> [MissingPhoto] { [] }
    func peerLacks(_ peer: AuthorID) -> [PeerLack] { [] }
    func saveLacks(_ lacks: [PeerLack]) {}
    nonisolated func photoURL(_ hash: AssetHash) -> URL { URL(fileURLWithPath: "/nonexistent/\(hash.short)") }
    nonisolated var partialPhotos: URL { URL(fileURLWithPath: "/nonexistent/partial") }
    func commitPhotos(_ photos: [(file: URL, hash: AssetHash, bytes: Int64)]) -> [Bool] { photos.map { _ in false } }
    func isPhotoShown(_ hash: AssetHash) -> Bool { false }
    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) -> Bool { false }
    func membershipView() -> MembershipView { view }
    func membershipProof(in group: GroupID) -> [UInt8]? { nil }
    func groups(ofPosts posts: [PostID]) -> [PostID: GroupID] { [:] }

    func redeemInvite(
        id: [UInt8],
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool
    )
        throws -> (group: GroupID, record: [UInt8])
    {
        throw CancellationError()
    }

    func askToJoin(node: NodeID, log: AuthorID, name: String?, host: String, port: Int) -> JoinRequestAnswer {
        .noAdmin
    }

    func completeJoin(log: AuthorID, group: GroupID) {}
}

/// A RECORDS frame's records that this node holds already are found before verification and never verified nor
/// stored again; a record at a held sequence that differs (a fork) is verified and stored as usual.
@Suite("Held records are dropped before verification")
struct HeldRecordsTests {
    /// Profile records of `author`'s log, 1 to `count`, chained; `name` tells two versions of the log apart.
    private static func log(of author: NodeIdentity, _ count: UInt64, name: String = "name") throws -> [VerifiedRecord]
    {
        var records: [VerifiedRecord] = []
        for sequence in 1...count {
            let content = RecordContent(
                author: author.author,
                sequence: sequence,
                previous: records.last?.id,
                createdAt: Timestamp(milliseconds: 1_700_000_000_000 + Int64(sequence)),
                body: .profile(name: "\(name) \(sequence)")
            )
            records.append(try author.sign(content))
        }
        return records
    }

    /// A session with `sender` on an engine over `store`, in one group with this node.
    private static func session(
        store: HeldTestStore,
        us: NodeIdentity,
        sender: NodeIdentity,
        view: MembershipView,
        group: GroupID
    ) async -> PeerSession {
        var configuration = SyncConfiguration()
        configuration.antiEntropyInterval = nil
        let engine = SyncEngine(store: store, identity: us, configuration: configuration, logger: Logger(label: "test"))
        let session = PeerSession(
            peer: sender.author,
            hello: Hello(nonce: .random(), node: sender.author),
            initiator: false,
            host: "127.0.0.1",
            engine: engine,
            scope: SessionScope(peer: sender.node, groups: [group], view: view),
            clocks: (nil, nil),
            logger: Logger(label: "test")
        )
        #expect(await engine.register(session) == nil)
        return session
    }

    @Test("held bytes are never verified (a broken copy held is acknowledged); a fork is verified and stored")
    func heldDroppedForkKept() async throws {
        let us = try NodeIdentity(seed: [UInt8](repeating: 1, count: 32))
        let sender = try NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
        let group = GroupID(founder: us.author)
        let view = MembershipView(
            groups: [group: .init(id: group, name: "g", open: false, network: false, log: us.author)],
            logs: [
                us.author: .init(group: group, node: us.node, admin: true, removedThrough: nil),
                sender.author: .init(group: group, node: sender.node, admin: false, removedThrough: nil),
            ]
        )
        let store = HeldTestStore(view: view)
        let records = try Self.log(of: sender, 3)
        // Held: records 1 and 2 as signed, and at 3 a copy with its last byte flipped (its content no longer
        // matches its header). Only a node that parsed or verified held records would notice.
        for record in records.prefix(2) {
            await store.hold(record.bytes, id: record.id, author: sender.author, sequence: record.header.sequence)
        }
        var broken = records[2].bytes
        broken[broken.count - 1] ^= 0xFF
        await store.hold(broken, id: records[2].id, author: sender.author, sequence: 3)
        let session = await Self.session(store: store, us: us, sender: sender, view: view, group: group)

        try await session.receive(.records(live: true, [records[0].bytes, records[1].bytes, broken]))
        #expect(await store.ingested.isEmpty, "nothing stored: every record was held")
        let acks = session.outbox.takeQueued(limit: .max).filter { if case .ack = $0 { true } else { false } }
        #expect(acks == [.ack(VectorClock([sender.author: 3]))])
        #expect(await session.currentStats().recordsIn == 3)

        // Another record at sequence 2 (a fork): not the held bytes, so verified and handed to storage.
        let fork = try Self.log(of: sender, 2, name: "other")[1]
        try await session.receive(.records(live: true, [fork.bytes]))
        #expect(await store.ingested.map { $0.map(\.id) } == [[fork.id]])
        await session.close()
    }

    @Test("a record's author and sequence are read from their place in the header")
    func positionInHeader() throws {
        let sender = try NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
        let record = try Self.log(of: sender, 2)[1]
        let position = try #require(PeerSession.position(of: record.bytes))
        #expect(position.0 == sender.author)
        #expect(position.1 == 2)
        #expect(PeerSession.position(of: Array(record.bytes.prefix(45))) == nil)
    }

    @Test("sorted sequence numbers are cut into runs without a gap")
    func runs() {
        let entries: [(sequence: UInt64, index: Int)] = [(1, 0), (2, 1), (2, 2), (3, 3), (7, 4), (9, 5), (10, 6)]
        #expect(PeerSession.runs(entries).map { $0.map(\.sequence) } == [[1, 2, 2, 3], [7], [9, 10]])
    }
}
