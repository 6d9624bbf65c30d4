import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// The thumbnails a photo's live posts commit to (PROTOCOL.md §2.5): what a receiver checks a peer's thumbnail
/// against (§7.4.19).
@Suite struct ThumbnailCommitmentTests {
    static func photo(_ seed: String, thumbnail: String?) -> PhotoReference {
        var photo = TestPhoto.reference(seed)
        photo.thumbnail = thumbnail.map {
            ThumbnailReference(sha256: AssetHash.of(Data($0.utf8)), byteCount: UInt32($0.utf8.count))
        }
        return photo
    }

    @Test("a post's commitment, its edit's new photo's in either order, none for a record without, none once deleted")
    func commitmentsFollowTheShownPhoto() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 11)
        let first = Self.photo("first", thumbnail: "first thumbnail")
        let second = Self.photo("second", thumbnail: "second thumbnail")
        let bare = Self.photo("bare", thumbnail: nil)
        let post = factory.make(.post(caption: "lake", photo: first, location: nil), by: 0)
        let edit = factory.make(.edit(post: PostID(post.id), change: PostChange(photo: second)), by: 0)
        let other = factory.make(.post(caption: "bare", photo: bare, location: nil), by: 1)
        let delete = factory.make(.delete(targets: [post.id]), by: 0)
        let hash = { (text: String) in AssetHash.of(Data(text.utf8)) }
        for order in [[post, edit, other], [edit, other, post]] {
            let temporary = try TemporaryStore()
            let store = temporary.store
            _ = try await store.ingest(Array(order.prefix(1)))
            if order.first == post {
                // The post alone: its photo's thumbnail.
                #expect(try await store.committedThumbnails(of: first.sha256) == [hash("first thumbnail")])
            }
            _ = try await store.ingest(Array(order.dropFirst()))
            // The edit put in another photo: the post commits to that photo's thumbnail, and the first photo's
            // commitment went with it.
            #expect(try await store.committedThumbnails(of: second.sha256) == [hash("second thumbnail")])
            #expect(try await store.committedThumbnails(of: first.sha256).isEmpty)
            // A post that commits to no thumbnail.
            #expect(try await store.committedThumbnails(of: bare.sha256).isEmpty)
            // The photos to fetch say which posts sign a thumbnail: the fetcher asks for it rather than make one.
            let missing = Dictionary(
                uniqueKeysWithValues: try await store.missingPhotos().map { ($0.hash, $0.signsThumbnail) }
            )
            #expect(missing == [second.sha256: true, bare.sha256: false])
            // And which one, so that a receiver takes it as signed without another look at the store.
            let signed = Dictionary(
                uniqueKeysWithValues: try await store.missingPhotos().map { ($0.hash, $0.signedThumbnail) }
            )
            #expect(signed == [second.sha256: hash("second thumbnail"), bare.sha256: nil])
            _ = try await store.ingest([delete])
            #expect(try await store.committedThumbnails(of: second.sha256).isEmpty)
        }
    }

    @Test("another author's post of a photo that signs another thumbnail removes the thumbnail kept of it")
    func contestedThumbnailRemoved() async throws {
        var factory = RecordFactory(authorCount: 2, seed: 12)
        let mine = Self.photo("shared", thumbnail: "the author's")
        var theirs = mine
        theirs.thumbnail = Self.photo("shared", thumbnail: "someone else's").thumbnail
        let first = factory.make(.post(caption: "mine", photo: mine, location: nil), by: 0)
        let again = factory.make(.post(caption: "mine again", photo: mine, location: nil), by: 0)
        let other = factory.make(.post(caption: "theirs", photo: theirs, location: nil), by: 1)
        let temporary = try TemporaryStore()
        let store = temporary.store
        let shard = store.assets.root.appendingPathComponent("thumbs/\(mine.sha256.hex.prefix(2))")
        let kept = shard.appendingPathComponent("\(mine.sha256.hex).jpg")
        try FileManager.default.createDirectory(at: shard, withIntermediateDirectories: true)
        #expect(try await store.ingest([first]).contestedThumbnails.isEmpty)
        try Data("the author's".utf8).write(to: kept)
        // The same thumbnail signed again: no contest, the file stays.
        #expect(try await store.ingest([again]).contestedThumbnails.isEmpty)
        #expect(FileManager.default.fileExists(atPath: kept.path))
        #expect(try await store.missingPhotos().map(\.signedThumbnail) == [mine.thumbnail?.sha256])
        // Another one for the same photo: the file goes, and the photo commits to two.
        #expect(try await store.ingest([other]).contestedThumbnails == [mine.sha256])
        #expect(!FileManager.default.fileExists(atPath: kept.path))
        #expect(try await store.committedThumbnails(of: mine.sha256).count == 2)
        // Two signed: the photo to fetch has no signed thumbnail (one is made from the photo).
        #expect(try await store.missingPhotos().map(\.signedThumbnail) == [nil])
        #expect(try await store.missingPhotos().map(\.signsThumbnail) == [true])
    }
}
