import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Testing

/// Small photos asked for many at once (PHOTOS_WANT) from a hostile or older peer: bytes that do not match their
/// hash, PHOTOS never asked for, and a peer that does not answer at all. Each: the error or the fallback the node
/// shows, that it goes on serving, and that nothing wrong is stored.
@Suite("Hostile peers and small photos (PHOTOS)", .serialized)
struct HostilePhotosTests {
    @Test("a small photo whose bytes do not match is discarded; a PHOTOS not asked for ends the session")
    func wrongSmallPhoto() async throws {
        try await HostileTests.withTarget { target in
            let seed = "a small photo only the hostile peer has \(UUID())"
            let photo = TestPhoto.reference(seed)
            let (client, post) = try await HostileTests.postOnlyHeldHere(photo, "small and wrong", to: target)
            try await HostileTests.waitFor(.photosWant([photo.sha256]), from: client)
            var bytes = [UInt8](seed.utf8)
            bytes[0] ^= 0x01
            try client.send(.photos([SmallPhoto(hash: photo.sha256, bytes: bytes)]))
            try await eventually("the node logged the mismatch") {
                target.node.logText.contains("a photo did not match its post's SHA-256; discarded")
            }
            let kept = try await target.node.withStore { store in
                (try await store.hasPhoto(photo.sha256), try await store.photoContent(photo.sha256))
            }
            #expect(kept.0 == false && kept.1 == nil, "nothing of the wrong photo is kept")
            let available = try await target.node.withStore { try await $0.post(PostID(post.id))?.post.photo.available }
            #expect(available == false)
            #expect(client.end == nil, "a wrong photo is no protocol error: the session goes on")
            // The same photo again, now that its PHOTOS_WANT is answered: data the node did not ask for.
            try client.send(.photos([SmallPhoto(hash: photo.sha256, bytes: [UInt8](seed.utf8))]))
            let error = try await client.expectRefusal(.unexpectedMessage)
            #expect(error?.message.contains("PHOTOS for a photo this node did not ask the peer for") == true)
            #expect(try await target.node.withStore { try await $0.hasPhoto(photo.sha256) } == false)
            try await target.expectStillServing()
        }
    }

    @Test(
        "PHOTOS_WANT is answered by the groups the session shares: bytes for a photo of the test network, none for one of a group the peer is not in or one not here"
    )
    func photosWantAnsweredByGroup() async throws {
        try await GroupHostileTests.withTarget { target, _, privatePost in
            let photo = { (post: String) in
                try await target.node.withStore { try await $0.post(PostID(hex: post)!)?.post.photo.sha256 }
            }
            let shared = try #require(try await photo(target.post))
            let hidden = try #require(try await photo(privatePost))
            let absent = TestPhoto.reference("a photo this node does not have \(UUID())").sha256
            let client = try await RawClient.handshake(port: target.node.port)
            try client.send(.photosWant([shared, hidden, absent]))
            let isPhotos = { (message: WireMessage) in if case .photos = message { true } else { false } }
            try await client.read(timeout: .seconds(10)) { $0.contains(where: isPhotos) }
            let answer = client.received.flatMap { message -> [SmallPhoto] in
                if case .photos(let entries) = message { entries } else { [] }
            }
            #expect(answer.map(\.hash) == [shared, hidden, absent], "each photo answered once, in order")
            let given = try #require(answer.first?.bytes, "the test network's photo is given")
            #expect(AssetHash.of(Data(given)) == shared)
            #expect(
                answer.dropFirst().allSatisfy { $0.bytes == nil },
                "no bytes of the private group's or a photo not here"
            )
            #expect(client.end == nil)
            try await target.expectUnchanged()
            try await target.expectStillServing()
        }
    }

    @Test("a peer that leaves PHOTOS_WANT unanswered (an older node) is asked with PHOTO_WANT, and the photo comes")
    func silentPeerFallsBack() async throws {
        try await HostileTests.withTarget { target in
            let seed = "a small photo of a peer that knows no PHOTOS_WANT \(UUID())"
            let photo = TestPhoto.reference(seed, bytes: UInt64(seed.utf8.count))
            let (client, post) = try await HostileTests.postOnlyHeldHere(photo, "from an older node", to: target)
            try await HostileTests.waitFor(.photosWant([photo.sha256]), from: client)
            // Ignored, as a node that does not know the optional type does (§7.3): after 10 s, the node asks again
            // with PHOTO_WANT.
            try await HostileTests.waitFor(.photoWant(photo.sha256, offset: 0), from: client, pings: 60)
            let bytes = [UInt8](seed.utf8)
            try client.send(.photoData(photo.sha256, offset: 0, chunk: bytes))
            try client.send(.photoEnd(photo.sha256, totalBytes: UInt64(bytes.count)))
            try await eventually("the photo arrived through PHOTO_WANT") {
                try await target.node.withStore { try await $0.post(PostID(post.id))?.post.photo.available } == true
            }
            #expect(target.node.logText.contains("a peer left PHOTOS_WANT unanswered; asking it for photos one by one"))
            #expect(client.end == nil)
            try await target.expectStillServing()
        }
    }
}
