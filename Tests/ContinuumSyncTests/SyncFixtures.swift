import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import Testing

@testable import ContinuumSync

/// What the in-process sync suites build the same way: identities from fixed seeds, chained logs of signed records,
/// and an engine with a session registered on it, as ``SyncNetwork`` would after a handshake.
enum SyncFixtures {
    /// The node identity whose private key is 32 bytes of `seed`.
    static func identity(_ seed: UInt8) throws -> NodeIdentity {
        try NodeIdentity(seed: [UInt8](repeating: seed, count: 32))
    }

    /// Profile records of `author`'s log, 1 to `count`, chained; `name` tells two versions of the log apart.
    static func profileLog(of author: NodeIdentity, _ count: UInt64, name: String = "name") throws -> [VerifiedRecord] {
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

    /// An engine over `store` with the anti-entropy timer off: a test drives every round itself.
    static func engine(store: any SyncStorage, us: NodeIdentity) -> SyncEngine {
        var configuration = SyncConfiguration()
        configuration.antiEntropyInterval = nil
        return SyncEngine(store: store, identity: us, configuration: configuration, logger: Logger(label: "test"))
    }

    /// A session the peer opened with `engine`'s node, sharing `group` under `view`; not registered.
    static func session(
        on engine: SyncEngine,
        with peer: NodeIdentity,
        group: GroupID,
        view: MembershipView
    )
        -> PeerSession
    {
        PeerSession(
            peer: peer.author,
            hello: Hello(nonce: .random(), node: peer.author),
            initiator: false,
            host: "127.0.0.1",
            engine: engine,
            scope: SessionScope(peer: peer.node, groups: [group], view: view),
            clocks: (nil, nil),
            logger: Logger(label: "test")
        )
    }

    /// A session with `peer` on a new engine over `store`, registered (which must succeed).
    static func registeredSession(
        store: any SyncStorage,
        us: NodeIdentity,
        peer: NodeIdentity,
        view: MembershipView,
        group: GroupID
    ) async -> PeerSession {
        let engine = engine(store: store, us: us)
        let session = session(on: engine, with: peer, group: group, view: view)
        #expect(await engine.register(session) == nil)
        return session
    }
}
