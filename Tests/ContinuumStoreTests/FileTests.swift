import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

@Suite("Photo files and the identity key")
struct FileTests {
    @Test("a photo is stored once under its SHA-256, with no temp files left")
    func photosStoredOnce() async throws {
        let temporary = try TemporaryStore()
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let first = try await temporary.store.storePhoto(bytes)
        let second = try await temporary.store.storePhoto(bytes)
        #expect(first == second)
        let path = temporary.store.assets.url(for: first)
        #expect(path.path.hasSuffix("photos/\(first.hex.prefix(2))/\(first.hex)"))
        #expect(try Data(contentsOf: path) == bytes)
        #expect(AssetHash.of(try Data(contentsOf: path)) == first)
        let temps = try FileManager.default.contentsOfDirectory(atPath: temporary.store.assets.temporaryDirectory.path)
        #expect(temps.isEmpty)
        #expect(try await temporary.store.hasPhoto(first))
    }

    @Test("a photo placed for a post is recorded by the post's own transaction, and not at all when it is refused")
    func photoRecordedWithItsPost() async throws {
        let temporary = try TemporaryStore()
        let me = NodeIdentity.generate()
        let bytes = Data("placed for a post \(UUID())".utf8)
        let hash = AssetHash.of(bytes)
        let (file, written) = try temporary.store.writePhoto(bytes)
        #expect(written == hash, "hashed while written")
        let placed = try temporary.store.placePhoto(file, as: hash, bytes: Int64(bytes.count))
        #expect(!FileManager.default.fileExists(atPath: file.path), "the temporary file was moved")
        #expect(try Data(contentsOf: temporary.store.assets.url(for: hash)) == bytes, "at its final name")
        #expect(try await !temporary.store.hasPhoto(hash), "placed, not recorded")

        // A record this node may not sign (an edit of someone else's post): its transaction records nothing.
        var factory = RecordFactory(authorCount: 1, seed: 5)
        let theirs = factory.post(by: 0)
        _ = try await temporary.store.ingest([theirs])
        do {
            _ = try await temporary.store.append(
                .edit(post: PostID(theirs.id), caption: "mine now"),
                by: me,
                recording: [placed]
            )
            Issue.record("a non-owner edit was signed")
        } catch let error as StoreError {
            #expect(error.code == .notOwner)
        }
        #expect(try await !temporary.store.hasPhoto(hash), "the refused record's transaction recorded no photo")

        let photo = PhotoReference(sha256: hash, byteCount: UInt64(bytes.count), mediaType: .png, width: 1, height: 1)
        let post = try await temporary.store.append(
            .post(caption: "placed", photo: photo, location: nil),
            by: me,
            recording: [placed]
        )
        #expect(try await temporary.store.hasPhoto(hash))
        let counts = try await temporary.store.counts()
        #expect(counts.photos == 1 && counts.photoBytes == Int64(bytes.count))
        let shown = try await temporary.store.post(PostID(post.id))?.post.photo
        #expect(shown?.sha256 == hash && shown?.available == true)
    }

    @Test("the identity key is created with mode 0600 and loads back as the same identity")
    func identityCreated() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        let (identity, created) = try IdentityFile.loadOrCreate(at: url)
        #expect(created)
        let mode = try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let (again, createdAgain) = try IdentityFile.loadOrCreate(at: url)
        #expect(!createdAgain && again.author == identity.author)
    }

    @Test("a key readable by others is refused, naming the file and the fix")
    func identityTooOpen() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try IdentityFile.loadOrCreate(at: url)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: url.path)
        do {
            _ = try IdentityFile.load(at: url)
            Issue.record("an open key was accepted")
        } catch {
            #expect(error.code == .identity)
            #expect(error.message.contains(url.path) && error.message.contains("chmod 600"))
        }
    }

    @Test(
        "a corrupt key is refused, naming the file and the fix",
        arguments: ["", "garbage", "continuum-node identity v1\nabc\n"]
    )
    func identityCorrupt(text: String) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: url) }
        _ = FileManager.default.createFile(
            atPath: url.path,
            contents: Data(text.utf8),
            attributes: [.posixPermissions: 0o600]
        )
        do {
            _ = try IdentityFile.load(at: url)
            Issue.record("a corrupt key was accepted")
        } catch {
            #expect(error.message.contains(url.path) && error.message.contains("corrupt"))
            #expect(error.message.contains("restore it from a backup"))
        }
    }
}

@Suite("Photo files handed to the disk as they are written")
struct FileWritebackTests {
    @Test("sync_file_range is found on this system, and a photo written in pieces with it is whole after its sync")
    func writebackFoundAndHarmless() async throws {
        #if os(Linux)
        #expect(FileWriteback.isAvailable, "dlsym did not find sync_file_range: photos would only be synced at the end")
        #endif
        let temporary = try TemporaryStore()
        // Over three pieces of 256 KiB, the last one short.
        let bytes = Data((0..<(600 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) })
        let hash = try await temporary.store.storePhoto(bytes)
        #expect(try Data(contentsOf: temporary.store.assets.url(for: hash)) == bytes)
        #expect(try await temporary.store.hasPhoto(hash))
    }
}
