import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Members by account: a linked device's declared log is a member of its account's groups, in every order")
struct DeclaredLogStoreTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 21, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 22, count: 32))
    let mallory = try! NodeIdentity(seed: [UInt8](repeating: 23, count: 32))

    /// The laptop founds the account and the group Family (its log there founds it), and adds the desktop; the
    /// desktop joins, declares its log in Family and posts there. Mallory, a device of no account of Alice's, declares
    /// a log of hers for Alice's account and posts in it.
    struct Scene {
        let records: [VerifiedRecord]
        let account: AccountID
        let group: GroupID
        let desktopLog: NodeIdentity
        let malloryLog: NodeIdentity
        let add: VerifiedRecord

        init(laptop: NodeIdentity, desktop: NodeIdentity, mallory: NodeIdentity) throws {
            var logs = LogSigner()
            let founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: laptop)
            account = AccountID(founding: founding.id)
            let laptopLog = laptop.logKey(salt: Data("family".utf8))
            group = GroupID(founder: laptopLog.author)
            _ = try logs.sign(.group(GroupFounding(node: laptop.node, name: "Family", open: false)), by: laptopLog)
            // The laptop declares its own log (what makes it its account's, §4.4).
            _ = try logs.sign(try laptopLog.declared(in: group, for: account, by: laptop), by: laptop)
            _ = try logs.sign(.post(caption: "from the laptop", photo: Self.photo(1), location: nil), by: laptopLog)
            add = try logs.sign(try desktop.added(to: account), by: laptop)
            _ = try logs.sign(AccountRecord.joining(account).body, by: desktop)
            desktopLog = desktop.logKey(salt: Data("family".utf8))
            _ = try logs.sign(try desktopLog.declared(in: group, for: account, by: desktop), by: desktop)
            _ = try logs.sign(.post(caption: "from the desktop", photo: Self.photo(2), location: nil), by: desktopLog)
            malloryLog = mallory.logKey(salt: Data("family".utf8))
            _ = try logs.sign(try malloryLog.declared(in: group, for: account, by: mallory), by: mallory)
            _ = try logs.sign(.post(caption: "from mallory", photo: Self.photo(3), location: nil), by: malloryLog)
            records = logs.records
        }

        static func photo(_ seed: Int) -> PhotoReference {
            TestPhoto.reference("declared-log-photo-\(seed)")
        }
    }

    /// What a person sees of the scene in `store`: each post's caption and account, and the node of each of the
    /// two declared logs (nil: not a member).
    static func seen(_ store: ContinuumStore, _ scene: Scene) async throws -> Seen {
        let posts = try await store.feed(FeedQuery(limit: 10)).posts
        let view = try await store.membershipView()
        return Seen(
            accounts: Dictionary(uniqueKeysWithValues: posts.map { ($0.caption, $0.account) }),
            desktopNode: view.logs[scene.desktopLog.author]?.node,
            malloryNode: view.logs[scene.malloryLog.author]?.node
        )
    }

    struct Seen: Equatable {
        var accounts: [String: AccountID?]
        var desktopNode: NodeID?
        var malloryNode: NodeID?
    }

    @Test("the desktop's log is a member with the desktop's node, both posts are the account's, Mallory's log is none")
    func declaredMember() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, mallory: mallory)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(scene.records)
        let seen = try await Self.seen(temporary.store, scene)
        #expect(seen.desktopNode == desktop.node)
        #expect(seen.malloryNode == nil)
        #expect(seen.accounts["from the laptop"] == .some(scene.account))
        #expect(seen.accounts["from the desktop"] == .some(scene.account))
        #expect(seen.accounts["from mallory"] == .some(nil))
    }

    @Test("without the add, the declaration makes no member; the add, arriving last, makes one")
    func addLast() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, mallory: mallory)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(scene.records.filter { $0.id != scene.add.id })
        #expect(try await Self.seen(temporary.store, scene).desktopNode == nil)
        _ = try await temporary.store.ingest([scene.add])
        #expect(try await Self.seen(temporary.store, scene).desktopNode == desktop.node)
    }

    @Test("every order and batching of the records gives what one batch in order gives", arguments: 0..<40)
    func orders(seed: UInt64) async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, mallory: mallory)
        let reference = try TemporaryStore()
        _ = try await reference.store.ingest(scene.records)
        var random = SplitMix64(seed: seed)
        var shuffled = scene.records
        shuffled.shuffle(using: &random)
        let temporary = try TemporaryStore()
        var start = 0
        while start < shuffled.count {
            let size = Int(random.next() % 3) + 1
            _ = try await temporary.store.ingest(Array(shuffled[start..<min(start + size, shuffled.count)]))
            start += size
        }
        #expect(try await Self.seen(temporary.store, scene) == Self.seen(reference.store, scene))
        #expect(try await Self.seen(temporary.store, scene).desktopNode == desktop.node)
    }

    @Test("the laptop removes the desktop keeping nothing: its declared log keeps nothing, and is nobody's member")
    func removal() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, mallory: mallory)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(scene.records)
        var logs = LogSigner(continuing: scene.records)
        let removal = try logs.sign(
            AccountRecord.deviceRemove(account: scene.account, device: desktop.author, frontier: []).body,
            by: laptop
        )
        _ = try await temporary.store.ingest([removal])
        let view = try await temporary.store.membershipView()
        #expect(view.logs[scene.desktopLog.author]?.removedThrough == 0)
        #expect(view.groupsShared(with: desktop.node).isEmpty)
        #expect(view.accountGroups[desktop.node] == nil)
    }

    @Test("the desktop removes the laptop: the laptop's logs keep what the desktop held, the desktop stays a member")
    func removeTheLaptop() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, mallory: mallory)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(scene.records)
        let removal = try await temporary.store.removeDevice(laptop.author, by: desktop)
        // The laptop's account log (founding, its declaration, the add) and its log in Family (group record, post).
        #expect(removal.logs == 2 && removal.kept == 5)
        let view = try await temporary.store.membershipView()
        let laptopLog = try #require(view.logs[scene.group.founder])
        #expect(laptopLog.removedThrough == 2)
        #expect(laptopLog.accepts(sequence: 2) && !laptopLog.accepts(sequence: 3))
        #expect(view.logs[scene.desktopLog.author]?.removedThrough == nil, "the desktop's own log stays")
        #expect(view.groupsShared(with: laptop.node).isEmpty, "the laptop shares nothing any more")
        #expect(view.accountGroups[desktop.node] == [scene.group], "the desktop shares the account's group")
        #expect(try await temporary.store.account(of: laptop.author) == nil)
        // What the laptop posted before stays, still the account's.
        #expect(try await Self.seen(temporary.store, scene).accounts["from the laptop"] == .some(scene.account))
        let again = try? await temporary.store.removeDevice(laptop.author, by: desktop)
        #expect(again == nil, "a removed device cannot be removed again")
    }
}
