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
}
