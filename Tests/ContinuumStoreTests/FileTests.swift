import ContinuumCore
import ContinuumStore
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
