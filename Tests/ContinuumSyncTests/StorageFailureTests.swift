import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// What a session does when the store fails under a decision: it errs on the side of the groups, and says nothing
/// to the peer that the store could not vouch for.
@Suite("Storage failures under a session's decisions")
struct StorageFailureTests {
    /// A session with `peer` on an engine over `store`, in one group with this node.
    private static func session(
        store: any SyncStorage,
        us: NodeIdentity,
        peer: NodeIdentity,
        view: MembershipView,
        group: GroupID
    ) async -> PeerSession {
        var configuration = SyncConfiguration()
        configuration.antiEntropyInterval = nil
        let engine = SyncEngine(store: store, identity: us, configuration: configuration, logger: Logger(label: "test"))
        let session = PeerSession(
            peer: peer.author,
            hello: Hello(nonce: .random(), node: peer.author),
            initiator: false,
            host: "127.0.0.1",
            engine: engine,
            scope: SessionScope(peer: peer.node, groups: [group], view: view),
            clocks: (nil, nil),
            logger: Logger(label: "test")
        )
        #expect(await engine.register(session) == nil)
        return session
    }

    /// The INTEREST frames queued for the peer.
    private static func interest(_ session: PeerSession) -> [WireMessage] {
        session.outbox.takeQueued(limit: .max).filter { if case .interest = $0 { true } else { false } }
    }

    @Test("interest is not advertised when the store cannot say which groups the wanted posts are in")
    func noInterestWhenGroupsFail() async throws {
        let us = try NodeIdentity(seed: [UInt8](repeating: 1, count: 32))
        let peer = try NodeIdentity(seed: [UInt8](repeating: 2, count: 32))
        let group = GroupID(founder: us.author)
        let view = MembershipView(
            groups: [group: .init(id: group, name: "g", open: false, network: false, log: us.author)],
            logs: [
                us.author: .init(group: group, node: us.node, admin: true, removedThrough: nil),
                peer.author: .init(group: group, node: peer.node, admin: false, removedThrough: nil),
            ]
        )
        let post = PostID(unchecked: Data(repeating: 7, count: 32))

        // A store that answers: the post (not held, so in no group) is advertised.
        let working = await Self.session(
            store: MemorySyncStorage(view: view),
            us: us,
            peer: peer,
            view: view,
            group: group
        )
        await working.advertise([post: 0], version: 1)
        #expect(Self.interest(working) == [.interest(replace: true, [PostInterest(post: post, hops: 0)])])
        await working.close()

        // A store that fails: nothing is advertised, rather than posts of groups the peer may not share.
        let failing = await Self.session(
            store: GroupsFailingStorage(view: view),
            us: us,
            peer: peer,
            view: view,
            group: group
        )
        await failing.advertise([post: 0], version: 1)
        #expect(Self.interest(failing) == [])
        await failing.close()
    }
}

/// A store whose `groups(ofPosts:)` and `isPhotoShown` fail; everything else is empty.
private actor GroupsFailingStorage: SyncStorage {
    private let view: MembershipView

    init(view: MembershipView) { self.view = view }

    private struct Failure: Error {}

    func groups(ofPosts posts: [PostID]) throws -> [PostID: GroupID] { throw Failure() }
    func isPhotoShown(_ hash: AssetHash) throws -> Bool { throw Failure() }
    func isPhotoShown(_ hash: AssetHash, inGroups groups: Set<GroupID>) throws -> Bool { throw Failure() }

    func clock() -> VectorClock { VectorClock([:]) }
    func byteCount(of ranges: [AuthorID: ClosedRange<UInt64>]) -> (records: UInt64, bytes: UInt64) { (0, 0) }
    func storedRecords(
        of author: AuthorID,
        in range: ClosedRange<UInt64>,
        limit: Int,
        maxBytes: Int
    ) -> [StoredRecord] { [] }
    func mayHold(_ author: AuthorID, from sequence: UInt64) -> Bool { false }
    func records(after rowid: Int64, limit: Int) -> [StoredRecord] { [] }
    func lastRecordRowid() -> Int64 { 0 }
    nonisolated func writeStamp() -> [Int]? { nil }
    func ingest(_ batch: StoreBatch<VerifiedRecord>) -> Ingested {
        Ingested(stored: [], forks: [], brokeRules: [:], clock: VectorClock([:]))
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
    func membershipView() -> MembershipView { view }
    func membershipProof(in group: GroupID) -> [UInt8]? { nil }
    func redeemInvite(
        id: [UInt8],
        node: NodeID,
        log: AuthorID,
        proves: @escaping @Sendable (Data) -> Bool
    ) throws -> (group: GroupID, record: [UInt8]) { throw Failure() }
    func askToJoin(node: NodeID, log: AuthorID, name: String?, host: String, port: Int) -> JoinRequestAnswer {
        .noAdmin
    }
    func completeJoin(log: AuthorID, group: GroupID) {}
}
