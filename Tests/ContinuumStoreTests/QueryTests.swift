import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Feed, filters, cursor and search")
struct QueryTests {
    @Test("the cursor continues exactly where the page ended while newer posts arrive")
    func stableCursor() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 12)
        let old = (0..<50).map { index in factory.post(by: index % 2) }
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(old)
        let newestFirst = old.reversed().map { PostID($0.id) }
        let first = try await temporary.store.feed(FeedQuery(limit: 10))
        #expect(first.posts.map(\.id) == Array(newestFirst[0..<10]))
        let newer = (0..<5).map { _ in factory.post(by: 0) }
        _ = try await temporary.store.ingest(newer)
        let second = try await temporary.store.feed(
            FeedQuery(limit: 10, cursor: try FeedCursor(token: try #require(first.nextCursor)))
        )
        #expect(second.posts.map(\.id) == Array(newestFirst[10..<20]))
        var cursor = second.nextCursor
        var rest: [PostID] = []
        while let token = cursor {
            let page = try await temporary.store.feed(FeedQuery(limit: 10, cursor: try FeedCursor(token: token)))
            rest += page.posts.map(\.id)
            cursor = page.nextCursor
        }
        #expect(rest == Array(newestFirst[20...]))
    }

    @Test("a malformed cursor is refused with a message that says what to pass")
    func malformedCursor() {
        for token in ["", "zzz", "djE6MTIz", String(repeating: "A", count: 200)] {
            #expect(throws: StoreError.self) { try FeedCursor(token: token) }
        }
        do {
            _ = try FeedCursor(token: "nonsense")
        } catch {
            #expect(error.message.contains("pass the nextCursor value"))
        }
    }

    @Test("filters: author, since, near")
    func filters() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 13)
        let paris = Coordinate(latitude: 48.8566, longitude: 2.3522)!
        let versailles = Coordinate(latitude: 48.8049, longitude: 2.1204)!  // about 18 km from Paris
        let tokyo = Coordinate(latitude: 35.6762, longitude: 139.6503)!
        let photo = factory.photo()
        let records = [
            factory.make(.post(caption: "Paris", photo: photo, location: paris), by: 0, at: .init(milliseconds: 1000)),
            factory.make(
                .post(caption: "Versailles", photo: photo, location: versailles),
                by: 1,
                at: .init(milliseconds: 2000)
            ),
            factory.make(.post(caption: "Tokyo", photo: photo, location: tokyo), by: 0, at: .init(milliseconds: 3000)),
            factory.make(.post(caption: "Nowhere", photo: photo, location: nil), by: 1, at: .init(milliseconds: 4000)),
        ]
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(records)
        func captions(_ query: FeedQuery) async throws -> [String] {
            try await temporary.store.feed(query).posts.map(\.caption)
        }
        #expect(try await captions(FeedQuery(author: factory.authors[0].author)) == ["Tokyo", "Paris"])
        #expect(try await captions(FeedQuery(since: .init(milliseconds: 2000))) == ["Nowhere", "Tokyo", "Versailles"])
        #expect(try await captions(FeedQuery(near: paris, radiusKm: 10)) == ["Paris"])
        #expect(try await captions(FeedQuery(near: paris, radiusKm: 25)) == ["Versailles", "Paris"])
        #expect(try await captions(FeedQuery(near: tokyo, radiusKm: 1)) == ["Tokyo"])
    }

    /// 30,000 posts: enough for every term to need the index and for common terms to fill a page. Search on 100,000
    /// records is timed by `continuum-bench store`; here, signing the posts in a debug build is most of the cost.
    @Test("search on 30,000 posts finds exactly the captions that contain the term, ignoring case and accents")
    func searchAtScale() async throws {
        var factory = RecordFactory(authorCount: 50, seed: 21)
        let temporary = try TemporaryStore()
        var captions: [PostID: String] = [:]
        // A few rare words are planted so that the expected sets stay under one page.
        let planted = ["Crème Brûlée at Zürich", "ZÜRICH lights", "zurich-bound", "Señor Café", "cafe society"]
        for batch in 0..<30 {
            var records: [VerifiedRecord] = []
            for index in 0..<1000 {
                var record = factory.post(by: index % 50)
                if batch % 10 == 0 && index < planted.count {
                    record = factory.make(
                        .post(caption: planted[index], photo: factory.photo(), location: nil),
                        by: index % 50
                    )
                }
                records.append(record)
                captions[PostID(record.id)] = record.caption
            }
            _ = try await temporary.store.ingest(records)
        }
        #expect(captions.count == 30_000)
        #expect(try await temporary.store.counts().posts == captions.count)
        // Several words match captions holding every one of them, in any order.
        let terms = ["zurich", "ZüRiCh", "CAFE", "brûlée", "Señor", "ri", "brûlée crème", "lights  ZÜRICH", "ri zu"]
        for term in terms {
            // The oracle: Foundation's own case- and diacritic-insensitive substring search, word by word.
            let words = term.split(separator: " ")
            let expected = Set(
                captions.filter { caption in
                    words.allSatisfy {
                        caption.value.range(of: $0, options: [.caseInsensitive, .diacriticInsensitive]) != nil
                    }
                }
                .keys
            )
            if expected.count <= 500 {
                let found = try await temporary.store.search(term, limit: 500)
                #expect(Set(found.map(\.id)) == expected, "term \(term)")
                #expect(!expected.isEmpty)
            } else {
                let found = try await temporary.store.search(term, limit: 500)
                #expect(found.count == 500)
                #expect(found.allSatisfy { expected.contains($0.id) }, "term \(term)")
            }
        }
        #expect(try await temporary.store.search("no such word qqq").isEmpty)
    }

    @Test("search skips deleted posts and finds edited captions")
    func searchAfterEdits() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 2)
        let post = factory.make(.post(caption: "Old lake", photo: factory.photo(), location: nil), by: 0)
        let other = factory.make(.post(caption: "Gone lake", photo: factory.photo(), location: nil), by: 0)
        let edit = factory.make(.edit(post: PostID(post.id), caption: "New Waterfall"), by: 0)
        let delete = factory.make(.delete(targets: [other.id]), by: 0)
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest([edit, delete, post, other])
        #expect(try await temporary.store.search("lake").isEmpty)
        #expect(try await temporary.store.search("water").map(\.id) == [PostID(post.id)])
        await #expect(throws: StoreError.self) { try await temporary.store.search("   ") }
    }

    @Test("id prefixes resolve like git: unique, ambiguous with candidates, unknown, deleted")
    func prefixes() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 30)
        let posts = (0..<40).map { _ in factory.post(by: 0) }
        let temporary = try TemporaryStore()
        _ = try await temporary.store.ingest(posts)
        let target = PostID(posts[0].id)
        #expect(try await temporary.store.resolvePost(String(target.hex.prefix(12))) == target)
        // 40 ids share 16 possible first digits, so some digit is ambiguous.
        let firstDigits = Dictionary(grouping: posts.map(\.id.hex), by: { $0.prefix(1) })
        let shared = try #require(firstDigits.first { $0.value.count > 1 })
        do {
            _ = try await temporary.store.resolvePost(String(shared.key))
            Issue.record("an ambiguous prefix resolved")
        } catch let error as StoreError {
            #expect(error.code == .ambiguous)
            for candidate in shared.value.prefix(10) { #expect(error.message.contains(candidate)) }
        }
        let unknown = String(repeating: "0", count: 20)
        await #expect(throws: StoreError.self) { try await temporary.store.resolvePost(unknown) }
        await #expect(throws: StoreError.self) { try await temporary.store.resolvePost("xyz") }
        _ = try await temporary.store.ingest([factory.make(.delete(targets: [target.record]), by: 0)])
        do {
            _ = try await temporary.store.resolvePost(target.hex)
            Issue.record("a deleted post resolved")
        } catch let error as StoreError {
            #expect(error.message.contains("was deleted"))
        }
    }
}
