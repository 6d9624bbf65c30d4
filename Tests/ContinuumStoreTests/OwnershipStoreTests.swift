import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Ownership by account: a device edits, deletes and hides what another device of its account posted")
struct OwnershipStoreTests {
    let laptop = try! NodeIdentity(seed: [UInt8](repeating: 31, count: 32))
    let desktop = try! NodeIdentity(seed: [UInt8](repeating: 32, count: 32))
    let bob = try! NodeIdentity(seed: [UInt8](repeating: 33, count: 32))
    let mallory = try! NodeIdentity(seed: [UInt8](repeating: 34, count: 32))

    /// Alice's laptop founds her account and Family, adds Bob and posts; Bob comments; the laptop adds the desktop,
    /// which declares its log in Family. `then` adds what the desktop (or Mallory) signs after that.
    struct Scene {
        var logs = LogSigner()
        let post: VerifiedRecord
        let comment: VerifiedRecord
        let desktopLog: NodeIdentity
        let malloryLog: NodeIdentity

        init(laptop: NodeIdentity, desktop: NodeIdentity, bob: NodeIdentity, mallory: NodeIdentity) throws {
            let founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: laptop)
            let account = AccountID(founding: founding.id)
            let laptopLog = laptop.logKey(salt: Data("family".utf8))
            let group = GroupID(founder: laptopLog.author)
            _ = try logs.sign(.group(GroupFounding(node: laptop.node, name: "Family", open: false)), by: laptopLog)
            _ = try logs.sign(try laptopLog.declared(in: group, for: account, by: laptop), by: laptop)
            let bobLog = bob.logKey(salt: Data("family".utf8))
            _ = try logs.sign(
                .member(MemberChange(group: group, action: .add, node: bob.node, log: bobLog.author)),
                by: laptopLog
            )
            post = try logs.sign(.post(caption: "Lake", photo: Self.photo(1), location: nil), by: laptopLog)
            comment = try logs.sign(.comment(post: PostID(post.id), text: "Nice lake"), by: bobLog)
            _ = try logs.sign(try desktop.added(to: account), by: laptop)
            _ = try logs.sign(AccountRecord.joining(account).body, by: desktop)
            desktopLog = desktop.logKey(salt: Data("family".utf8))
            _ = try logs.sign(try desktopLog.declared(in: group, for: account, by: desktop), by: desktop)
            malloryLog = mallory.logKey(salt: Data("family".utf8))
            _ = try logs.sign(try malloryLog.declared(in: group, for: account, by: mallory), by: mallory)
        }

        static func photo(_ seed: Int) -> PhotoReference {
            TestPhoto.reference("ownership-photo-\(seed)")
        }
    }

    /// The post's caption as shown (nil: not live), and whether Bob's comment's text is still held in any record.
    static func seen(_ store: ContinuumStore, _ scene: Scene) async throws -> (caption: String?, comment: Bool) {
        let detail = try await store.post(PostID(scene.post.id))
        let bytes = Data(try await store.allRecordBytes().joined())
        return (detail?.post.caption, bytes.range(of: Data("Nice lake".utf8)) != nil)
    }

    /// Ingests `records` in a shuffled order, in batches of 1 to 3.
    static func ingestShuffled(_ records: [VerifiedRecord], seed: UInt64, into store: ContinuumStore) async throws {
        var random = SplitMix64(seed: seed)
        var shuffled = records
        shuffled.shuffle(using: &random)
        var start = 0
        while start < shuffled.count {
            let size = Int(random.next() % 3) + 1
            _ = try await store.ingest(Array(shuffled[start..<min(start + size, shuffled.count)]))
            start += size
        }
    }

    @Test("the desktop's edit of the laptop's post applies; Mallory's does not, in every order", arguments: 0..<24)
    func edit(seed: UInt64) async throws {
        var scene = try Scene(laptop: laptop, desktop: desktop, bob: bob, mallory: mallory)
        let change = PostChange(caption: "Lake at dawn")
        _ = try scene.logs.sign(.edit(post: PostID(scene.post.id), change: change), by: scene.desktopLog)
        _ = try scene.logs.sign(
            .edit(post: PostID(scene.post.id), change: PostChange(caption: "Mallory was here")),
            by: scene.malloryLog
        )
        let temporary = try TemporaryStore()
        try await Self.ingestShuffled(scene.logs.records, seed: seed, into: temporary.store)
        let seen = try await Self.seen(temporary.store, scene)
        #expect(seen.caption == "Lake at dawn")
        #expect(seen.comment)
    }

    @Test("the desktop deletes the laptop's post: it goes with its comments, in every order", arguments: 0..<24)
    func delete(seed: UInt64) async throws {
        var scene = try Scene(laptop: laptop, desktop: desktop, bob: bob, mallory: mallory)
        _ = try scene.logs.sign(.delete(targets: [scene.post.id]), by: scene.desktopLog)
        let temporary = try TemporaryStore()
        try await Self.ingestShuffled(scene.logs.records, seed: seed, into: temporary.store)
        let seen = try await Self.seen(temporary.store, scene)
        #expect(seen.caption == nil)
        #expect(!seen.comment)
        #expect(try await temporary.store.counts().comments == 0)
    }

    @Test("an edit this node signs wins over its account's edits dated later by a device whose clock is ahead")
    func ownEditWins() async throws {
        let scene = try Scene(laptop: laptop, desktop: desktop, bob: bob, mallory: mallory)
        var ahead = LogSigner(createdAt: Timestamp(milliseconds: 1_900_000_000_000), continuing: scene.logs.records)
        let laptopLog = laptop.logKey(salt: Data("family".utf8))
        _ = try ahead.sign(.edit(post: PostID(scene.post.id), change: PostChange(caption: "from 2030")), by: laptopLog)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(ahead.records)
        #expect(try await Self.seen(temporary.store, scene).caption == "from 2030")
        let change = PostChange(caption: "from the desktop, now")
        let signed = try await temporary.store.append(
            .edit(post: PostID(scene.post.id), change: change),
            by: scene.desktopLog
        )
        #expect(signed.header.createdAt.milliseconds == 1_900_000_000_001)
        #expect(try await Self.seen(temporary.store, scene).caption == "from the desktop, now")
    }

    @Test("a self-add naming the laptop's node (Appendix A 26) makes Mallory's log no log of the account")
    func selfAddNamingAnotherNode() async throws {
        var logs = LogSigner()
        let founding = try logs.sign(AccountRecord.founding(recovery: nil).body, by: laptop)
        let account = AccountID(founding: founding.id)
        let partyLog = laptop.logKey(salt: Data("party".utf8))
        let party = GroupID(founder: partyLog.author)
        _ = try logs.sign(.group(GroupFounding(node: laptop.node, name: "Party", open: true)), by: partyLog)
        _ = try logs.sign(try partyLog.declared(in: party, for: account, by: laptop), by: laptop)
        let post = try logs.sign(.post(caption: "Party", photo: Scene.photo(9), location: nil), by: partyLog)
        let malloryLog = mallory.logKey(salt: Data("party".utf8))
        _ = try logs.sign(
            .member(MemberChange(group: party, action: .add, node: laptop.node, log: malloryLog.author)),
            by: malloryLog
        )
        let spam = try logs.sign(.post(caption: "as the laptop", photo: Scene.photo(10), location: nil), by: malloryLog)
        _ = try logs.sign(.edit(post: PostID(post.id), change: PostChange(caption: "defaced")), by: malloryLog)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(logs.records)
        #expect(try await temporary.store.post(PostID(post.id))?.post.caption == "Party")
        #expect(try await temporary.store.post(PostID(post.id))?.post.account == account)
        let shown = try #require(try await temporary.store.post(PostID(spam.id)))
        #expect(shown.post.account == nil, "Mallory's post is not the laptop's account's")
        #expect(try await !temporary.store.sameOwner(malloryLog.author, partyLog.author))
    }

    @Test("the desktop hides Bob's comment on the laptop's post; Mallory's delete of the post does nothing")
    func hideAndForgedDelete() async throws {
        var scene = try Scene(laptop: laptop, desktop: desktop, bob: bob, mallory: mallory)
        _ = try scene.logs.sign(.delete(targets: [scene.comment.id]), by: scene.desktopLog)
        _ = try scene.logs.sign(.delete(targets: [scene.post.id]), by: scene.malloryLog)
        for seed in 0..<8 as Range<UInt64> {
            let temporary = try TemporaryStore()
            try await Self.ingestShuffled(scene.logs.records, seed: seed, into: temporary.store)
            let seen = try await Self.seen(temporary.store, scene)
            #expect(seen.caption == "Lake", "seed \(seed)")
            #expect(!seen.comment, "seed \(seed)")
        }
    }
}
