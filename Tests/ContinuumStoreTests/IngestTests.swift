import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Ingest: order independence, duplicates, ownership, forks, log heads")
struct IngestTests {
    /// What the feed must show, computed from the record list alone, without the store.
    struct Expected {
        var captions: [PostID: String] = [:]
        var commentCounts: [PostID: Int] = [:]

        init(_ records: [VerifiedRecord]) {
            var posts: [PostID: (author: AuthorID, caption: String)] = [:]
            var latestEdit: [PostID: (seq: UInt64, caption: String, author: AuthorID)] = [:]
            var deleted: Set<Data> = []  // "target|author"
            var comments: [(id: RecordID, post: PostID, author: AuthorID)] = []
            for record in records {
                guard let content = record.content else { continue }
                switch content.body {
                case .post(let caption, _, _): posts[PostID(record.id)] = (content.author, caption)
                case .edit(let post, let change):
                    if let caption = change.caption, (latestEdit[post]?.seq ?? 0) < content.sequence {
                        latestEdit[post] = (content.sequence, caption, content.author)
                    }
                case .delete(let targets):
                    for target in targets { deleted.insert(target.bytes + content.author.bytes) }
                case .comment(let post, _): comments.append((record.id, post, content.author))
                case .profile, .group, .member, .opaque: break
                }
            }
            for (id, post) in posts where !deleted.contains(id.bytes + post.author.bytes) {
                let edit = latestEdit[id].flatMap { $0.author == post.author ? $0.caption : nil }
                captions[id] = edit ?? post.caption
                commentCounts[id] = 0
            }
            for comment in comments where !deleted.contains(comment.id.bytes + comment.author.bytes) {
                if commentCounts[comment.post] != nil { commentCounts[comment.post]! += 1 }
            }
        }
    }

    @Test("1,000 random records in 20 shuffled orders give the same feed, comments and clock")
    func orderIndependence() async throws {
        var factory = RecordFactory(authorCount: 6, seed: 5)
        let records = factory.history(count: 1000)
        let expected = Expected(records)
        // The history must exercise every rule, or this test could not fail.
        #expect(expected.captions.count > 100)
        #expect(records.contains { if case .edit = $0.body! { true } else { false } })
        #expect(records.contains { if case .delete = $0.body! { true } else { false } })

        var random = SplitMix64(seed: 99)
        var reference: VisibleState?
        var commentsBeforePost = 0
        for _ in 0..<20 {
            let shuffled = records.shuffled(using: &random)
            var seenPosts: Set<RecordID> = []
            for record in shuffled {
                if case .post = record.body! { seenPosts.insert(record.id) }
                if case .comment(let post, _) = record.body!, !seenPosts.contains(post.record) {
                    commentsBeforePost += 1
                }
            }
            let temporary = try TemporaryStore()
            for batch in shuffled.chunked(by: &random, max: 60) {
                let report = try await temporary.store.ingest(batch)
                #expect(report.stored.count == batch.count)
            }
            let state = try await VisibleState.of(temporary.store)
            let captions = Dictionary(uniqueKeysWithValues: state.feed.map { ($0.id, $0.caption) })
            let counts = Dictionary(uniqueKeysWithValues: state.feed.map { ($0.id, $0.commentCount) })
            #expect(Set(captions.keys) == Set(expected.captions.keys), "the live posts")
            let wrongCaptions = expected.captions.filter { captions[$0.key] != $0.value }.map(\.key.short)
            #expect(wrongCaptions.isEmpty, "posts with the wrong caption: \(wrongCaptions.prefix(5))")
            let wrongCounts = expected.commentCounts.filter { counts[$0.key] != $0.value }.map(\.key.short)
            #expect(wrongCounts.isEmpty, "posts with the wrong comment count: \(wrongCounts.prefix(5))")
            for post in state.feed { #expect(state.comments[post.id]?.count == post.commentCount) }
            #expect(state.clock.recordCount == 1000)
            if let reference { #expect(state == reference, "the same as the first order") } else { reference = state }
        }
        #expect(commentsBeforePost > 100, "shuffles put comments before their posts")
    }

    @Test("ingesting the same records twice changes nothing")
    func duplicates() async throws {
        var factory = RecordFactory(authorCount: 3, seed: 8)
        let records = factory.history(count: 200)
        let temporary = try TemporaryStore()
        #expect(try await temporary.store.ingest(records).stored.count == 200)
        let before = try await VisibleState.of(temporary.store)
        let report = try await temporary.store.ingest(records.reversed())
        #expect(report.duplicates == 200 && report.stored.isEmpty)
        #expect(try await VisibleState.of(temporary.store) == before)
        #expect(try await temporary.store.allRecordBytes().count == 200)
    }

    @Test("an edit or delete of someone else's post never takes effect, in either arrival order")
    func nonOwnerNeverApplied() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 3)
        let post = factory.post(by: 0)
        let postID = PostID(post.id)
        let forgedEdit = factory.make(.edit(post: postID, caption: "hijacked"), by: 1)
        let forgedDelete = factory.make(.delete(targets: [post.id]), by: 1)
        for order in [[post, forgedEdit, forgedDelete], [forgedEdit, forgedDelete, post]] {
            let temporary = try TemporaryStore()
            var ignored: [IngestReport.Rejection] = []
            for record in order { ignored += try await temporary.store.ingest([record]).ignored }
            if order.first == post {
                // The target was already here, so the broken rule is reported, naming it.
                #expect(ignored.map(\.error.code) == [.notOwner, .notOwner])
                #expect(ignored.first?.error.message.contains("belongs to someone else") == true)
            }
            let shown = try await temporary.store.post(postID)
            #expect(shown?.post.caption == post.caption && shown?.post.edited == false)
            #expect(try await temporary.store.feed(FeedQuery()).posts.map(\.id) == [postID])
            // Kept in the log, so that the author's log has no gap and every node holds the same set.
            #expect(try await temporary.store.clock()[factory.authors[1].author] == 2)
        }
    }

    @Test("a post's author hides another's comment: erased in all six arrival orders; a third author cannot")
    func hiddenCommentInAnyOrder() async throws {
        var factory = RecordFactory(authorCount: 3, seed: 5)
        let post = factory.post(by: 0)
        let comment = factory.make(.comment(post: PostID(post.id), text: "spam, spam, spam"), by: 1)
        let other = factory.make(.comment(post: PostID(post.id), text: "a kind word"), by: 2)
        let hide = factory.make(.delete(targets: [comment.id]), by: 0)
        let forged = factory.make(.delete(targets: [other.id]), by: 1)
        let orders = [
            [post, comment, hide], [post, hide, comment], [comment, post, hide],
            [comment, hide, post], [hide, post, comment], [hide, comment, post],
        ]
        for order in orders {
            let temporary = try TemporaryStore()
            var ignored: [RecordID] = []
            for record in order + [other, forged] {
                ignored += try await temporary.store.ingest([record]).ignored.map(\.id)
            }
            // A hide is never reported as a broken rule, not even before its post is here (a peer that sent its own
            // would be refused for it).
            #expect(!ignored.contains(hide.id), "order \(order.map(\.id.short))")
            #expect(ignored == [forged.id], "the forged delete is reported: its post and comment are here")
            let shown = try await temporary.store.post(PostID(post.id))
            #expect(shown?.comments.map(\.text) == ["a kind word"], "order \(order.map(\.id.short))")
            #expect(shown?.post.commentCount == 1)
            let bytes = try await temporary.store.allRecordBytes().joined()
            #expect(Data(bytes).range(of: Data("spam, spam, spam".utf8)) == nil, "the text is erased")
            #expect(Data(bytes).range(of: Data("a kind word".utf8)) != nil, "a comment by a third author stays")
        }
    }

    @Test("a comment by a log of another group than the post's is not shown, whatever the order of post and comments")
    func commentFromAnotherGroup() async throws {
        let first = GroupID(unchecked: Data(repeating: 1, count: 32))
        let second = GroupID(unchecked: Data(repeating: 2, count: 32))
        var home = RecordFactory(authorCount: 2, seed: 7, network: first)
        var away = RecordFactory(authorCount: 1, seed: 8, network: second)
        let post = home.post(by: 0)
        _ = home.make(.comment(post: PostID(post.id), text: "from the same group"), by: 1)
        _ = away.make(.comment(post: PostID(post.id), text: "from another group"), by: 0)
        // The member records first, as the sync layer delivers them (a log's records wait for its member record,
        // PROTOCOL.md §7.8.6); the post and the two comments in every order.
        let all = home.records + away.records
        let members = all.filter { $0.header.kind == .member }
        let others = all.filter { $0.header.kind != .member }
        var random = SplitMix64(seed: 11)
        for _ in 0..<8 {
            let temporary = try TemporaryStore()
            // This node knows both network groups (as `--network` makes it), so their member records count.
            let me = NodeIdentity.generate()
            _ = try await temporary.store.joinNetwork(first, name: "first", by: me)
            _ = try await temporary.store.joinNetwork(second, name: "second", by: me)
            for record in members + others.shuffled(using: &random) {
                _ = try await temporary.store.ingest([record])
            }
            let shown = try await temporary.store.post(PostID(post.id))
            #expect(shown?.comments.map(\.text) == ["from the same group"])
            #expect(shown?.post.commentCount == 1)
        }
    }

    @Test(
        "members count from the record on, not from the batch's end: in one batch, a comment of another group is not shown"
    )
    func membersPerRecordNotPerBatch() async throws {
        let first = GroupID(unchecked: Data(repeating: 1, count: 32))
        let second = GroupID(unchecked: Data(repeating: 2, count: 32))
        var home = RecordFactory(authorCount: 2, seed: 7, network: first)
        var away = RecordFactory(authorCount: 1, seed: 8, network: second)
        let post = home.post(by: 0)
        _ = home.make(.comment(post: PostID(post.id), text: "from the same group"), by: 1)
        _ = away.make(.comment(post: PostID(post.id), text: "from another group"), by: 0)
        // Each log's member record comes before its records, as the sync layer sends them (§7.8.6); the batches
        // differ: all in one, or one record at a time (PROTOCOL.md Appendix A 27).
        let all = home.records + away.records
        let ordered = all.filter { $0.header.kind == .member } + all.filter { $0.header.kind != .member }
        for batches in [[ordered], ordered.map { [$0] }] {
            let temporary = try TemporaryStore()
            let me = NodeIdentity.generate()
            _ = try await temporary.store.joinNetwork(first, name: "first", by: me)
            _ = try await temporary.store.joinNetwork(second, name: "second", by: me)
            for batch in batches { _ = try await temporary.store.ingest(batch) }
            let shown = try await temporary.store.post(PostID(post.id))
            #expect(shown?.comments.map(\.text) == ["from the same group"], "\(batches.count) batches")
            #expect(shown?.post.commentCount == 1, "\(batches.count) batches")
        }
    }

    @Test("this node refuses to sign an edit or delete of someone else's post, and stores nothing")
    func nonOwnerRefusedLocally() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 3)
        let post = factory.post(by: 0)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([post])
        let me = NodeIdentity.generate()
        let before = try await temporary.store.allRecordBytes()
        for body in [RecordBody.edit(post: PostID(post.id), caption: "mine now"), .delete(targets: [post.id])] {
            do {
                _ = try await temporary.store.append(body, by: me)
                Issue.record("a non-owner \(body.kind.name) was signed")
            } catch let error as StoreError {
                #expect(error.code == .notOwner)
                #expect(error.message.contains("may only target its own author's records"))
            }
        }
        #expect(try await temporary.store.allRecordBytes() == before)
        #expect(try await temporary.store.clock()[me.author] == 0)
    }

    @Test("two records for one author and sequence: the second is a fork, kept as evidence, not stored")
    func forks() async throws {
        var first = RecordFactory(authorCount: 1, seed: 4)
        var second = RecordFactory(authorCount: 1, seed: 4)
        let one = first.make(.profile(name: "A"), by: 0)
        second.make(.profile(name: "A"), by: 0)
        let twoA = first.make(.profile(name: "A2"), by: 0)
        let twoB = second.make(.profile(name: "B2"), by: 0, at: Timestamp(milliseconds: 5))
        #expect(twoA.header.sequence == twoB.header.sequence && twoA.id != twoB.id)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([one, twoA])
        let report = try await temporary.store.ingest([twoB])
        #expect(report.forks.count == 1 && report.stored.isEmpty)
        #expect(report.forks.first?.kept == twoA.id && report.forks.first?.refused == twoB.id)
        #expect(try await temporary.store.forks().map(\.refused) == [twoB.id])
        #expect(try await temporary.store.counts().forks == 1)
        #expect(try await temporary.store.displayName(of: one.header.author) == "A2")

        // A record whose `previous` contradicts the held record before it is a fork too.
        let threeB = second.make(.profile(name: "B3"), by: 0)
        let chain = try await temporary.store.ingest([threeB])
        #expect(chain.forks.first?.reason == "previous does not match the held record")
        #expect(try await temporary.store.clock()[one.header.author] == 2)
    }

    @Test("the clock counts only the contiguous prefix of each log")
    func logHeads() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 6)
        let records = (0..<5).map { _ in factory.post(by: 0) }
        let author = records[0].header.author
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([records[0], records[2], records[4]])
        #expect(try await temporary.store.clock()[author] == 1)
        _ = try await temporary.store.ingest([records[1]])
        #expect(try await temporary.store.clock()[author] == 3)
        _ = try await temporary.store.ingest([records[3]])
        #expect(try await temporary.store.clock()[author] == 5)
        #expect(
            try await temporary.store.storedRecords(of: author, in: 2...4, limit: 10, maxBytes: 1 << 20).map(\.id)
                == records[1...3].map(\.id)
        )
    }

    @Test("appending signs the next record of the local log, chained to the previous one")
    func append() async throws {
        let temporary = try TemporaryStore()
        let identity = NodeIdentity.generate()
        let first = try await temporary.store.append(.profile(name: "Me"), by: identity)
        let second = try await temporary.store.append(.profile(name: "Me again"), by: identity)
        #expect(first.header.sequence == 1 && second.header.sequence == 2)
        #expect(second.header.previous == first.id)
        #expect(try SignedRecord(bytes: second.bytes).verify().id == second.id)
        #expect(try await temporary.store.displayName(of: identity.author) == "Me again")
    }
}
