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
    /// The INTEREST frames queued for the peer.
    private static func interest(_ session: PeerSession) -> [WireMessage] {
        session.outbox.takeQueued(limit: .max).filter { if case .interest = $0 { true } else { false } }
    }

    @Test("interest is not advertised when the store cannot say which groups the wanted posts are in")
    func noInterestWhenGroupsFail() async throws {
        let us = try SyncFixtures.identity(1)
        let peer = try SyncFixtures.identity(2)
        let (group, view) = SyncFixtures.group(of: us, members: [peer])
        let post = PostID(unchecked: Data(repeating: 7, count: 32))

        // A store that answers: the post (not held, so in no group) is advertised.
        let working = await SyncFixtures.registeredSession(
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
        let failingStore = MemorySyncStorage(view: view)
        await failingStore.failLookups()
        let failing = await SyncFixtures.registeredSession(
            store: failingStore,
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
