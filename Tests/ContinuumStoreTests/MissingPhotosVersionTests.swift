import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// The version the photo fetcher's look reads first (`missingPhotos(limit:changedSince:)`): it moves with every
/// change to the photos missing, so that a look that finds it unchanged may keep its list, and with nothing else.
@Suite struct MissingPhotosVersionTests {
    @Test("the version moves with members, posts, photos and deletions, and not with a comment")
    func versionFollowsWhatTheLookReads() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 21)
        let lake = TestPhoto.reference("the lake's photo")
        let post = factory.make(.post(caption: "lake", photo: lake, location: nil), by: 0)
        let comment = factory.make(.comment(post: PostID(post.id), text: "nice"), by: 0)
        let hill = TestPhoto.reference("the hill's photo")
        let other = factory.make(.post(caption: "hill", photo: hill, location: nil), by: 0)
        let delete = factory.make(.delete(targets: [other.id]), by: 0)
        let temporary = try TemporaryStore()
        let store = temporary.store

        let empty = try await store.missingPhotos(limit: 10, changedSince: nil)
        #expect(empty.photos == [])
        let unchanged = try await store.missingPhotos(limit: 10, changedSince: empty.version)
        #expect(unchanged.photos == nil, "nothing changed: the caller's list stands")
        #expect(unchanged.version == empty.version)

        // Each step changes what the look reads: the version moves, and the list is read again.
        var last = empty.version
        func look(after step: String) async throws -> [AssetHash]? {
            let look = try await store.missingPhotos(limit: 10, changedSince: last)
            #expect(look.version != last, "the version did not move with \(step)")
            last = look.version
            return look.photos?.map(\.hash)
        }
        _ = try await store.createGroup(name: "Lake", open: true, by: NodeIdentity.generate())
        #expect(try await look(after: "a group founded, with its first member") == [])
        _ = try await store.ingest([post])
        #expect(try await look(after: "a post") == [lake.sha256])

        // A comment changes nothing the look reads.
        _ = try await store.ingest([comment])
        #expect(try await store.missingPhotos(limit: 10, changedSince: last).photos == nil)

        #expect(try await store.storePhoto(Data("the lake's photo".utf8)) == lake.sha256)
        #expect(try await look(after: "the photo stored") == [])
        _ = try await store.ingest([other])
        #expect(try await look(after: "another post") == [hill.sha256])
        _ = try await store.ingest([delete])
        #expect(try await look(after: "its deletion") == [])
        #expect(try await store.missingPhotos(limit: 10, changedSince: last).photos == nil)
    }

    @Test("the photos of given posts: missing ones of live posts, once each, without reading the others")
    func photosOfGivenPosts() async throws {
        var factory = RecordFactory(authorCount: 1, seed: 22)
        let lake = TestPhoto.reference("the lake's photo")
        let hill = TestPhoto.reference("the hill's photo")
        let river = TestPhoto.reference("the river's photo")
        let sea = TestPhoto.reference("the sea's photo")
        let first = factory.make(.post(caption: "lake", photo: lake, location: nil), by: 0)
        let again = factory.make(.post(caption: "lake again", photo: lake, location: nil), by: 0)
        let held = factory.make(.post(caption: "hill", photo: hill, location: nil), by: 0)
        let gone = factory.make(.post(caption: "river", photo: river, location: nil), by: 0)
        let delete = factory.make(.delete(targets: [gone.id]), by: 0)
        let other = factory.make(.post(caption: "sea", photo: sea, location: nil), by: 0)
        let temporary = try TemporaryStore()
        let store = temporary.store
        _ = try await store.ingest([first, again, held, gone, delete, other])
        #expect(try await store.storePhoto(Data("the hill's photo".utf8)) == hill.sha256)

        let both = try await store.missingPhotos(shownBy: [PostID(first.id), PostID(again.id)])
        #expect(both.map(\.hash) == [lake.sha256], "one entry per photo")
        #expect(both.first?.bytes == lake.byteCount)
        #expect(both.first.map { [PostID(first.id), PostID(again.id)].contains($0.post) } == true)
        #expect(try await store.missingPhotos(shownBy: [PostID(held.id)]) == [], "a photo held")
        #expect(try await store.missingPhotos(shownBy: [PostID(gone.id)]) == [], "an erased post")
        #expect(try await store.missingPhotos(shownBy: [PostID(delete.id)]) == [], "not a post")
        #expect(try await store.missingPhotos(shownBy: []) == [])
        // The look gives the sea's photo too; the given posts' read does not.
        let look = try await store.missingPhotos(limit: 10, changedSince: nil)
        #expect(Set(look.photos?.map(\.hash) ?? []) == [lake.sha256, sea.sha256])
        #expect(try await store.missingPhotos(shownBy: [PostID(first.id), PostID(held.id)]) == both)
    }
}
