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

    /// The group `founder` founded (its admin), with each of `members` a member of it: its id and the view of it.
    static func group(of founder: NodeIdentity, members: [NodeIdentity]) -> (GroupID, MembershipView) {
        let group = GroupID(founder: founder.author)
        var logs: [AuthorID: MembershipView.Log] = [
            founder.author: .init(group: group, node: founder.node, admin: true, removedThrough: nil)
        ]
        for member in members {
            logs[member.author] = .init(group: group, node: member.node, admin: false, removedThrough: nil)
        }
        let view = MembershipView(
            groups: [group: .init(id: group, name: "g", open: false, network: false, log: founder.author)],
            logs: logs
        )
        return (group, view)
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

    /// Waits until `condition` holds: checked now and after each element of any of `streams` (an engine's events,
    /// which it emits after storing, or a link's deliveries); fails after `timeout`, which only bounds a broken run.
    static func waitUntil<Element: Sendable>(
        _ what: String,
        _ streams: [AsyncStream<Element>],
        timeout: Duration = .seconds(90),
        _ condition: @escaping @Sendable () async -> Bool
    ) async throws {
        // Each task answers true (met), nil (its stream ended unmet) or false (the time is up): the first non-nil
        // answer decides, and the other tasks are cancelled.
        let met = try await withThrowingTaskGroup(of: Bool?.self) { group in
            group.addTask { await condition() ? true : nil }
            for stream in streams {
                group.addTask {
                    for await _ in stream where await condition() { return true }
                    return nil
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            var met = false
            for try await answer in group {
                guard let answer else { continue }
                met = answer
                break
            }
            group.cancelAll()
            return met
        }
        try #require(met, "timed out waiting until \(what)")
    }

    /// One stream's `waitUntil`.
    static func waitUntil<Element: Sendable>(
        _ what: String,
        _ events: AsyncStream<Element>,
        timeout: Duration = .seconds(90),
        _ condition: @escaping @Sendable () async -> Bool
    ) async throws {
        try await waitUntil(what, [events], timeout: timeout, condition)
    }
}
