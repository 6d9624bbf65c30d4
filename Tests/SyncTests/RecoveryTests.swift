import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// Recovering an account with its recovery code across real nodes (PROTOCOL.md §2.10, §7.8.20).
@Suite("Recovering an account: the recovery code on a new machine", .serialized)
struct RecoveryTests {
    @Test(
        "a recovery code on a third machine removes the device that removed the others, which are devices again"
    )
    func recoverAfterTheft() async throws {
        let laptop = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        defer { for node in [laptop, bob] { node.remove() } }
        let words = try #require(laptop.recoveryCode)
        try await laptop.cli("group", "create", "Family")
        try await laptop.start()
        try await bob.start()
        try await bob.cli("join", try await laptop.cli("invite", "--host", "127.0.0.1", "--port", "\(laptop.port)"))
        let desktop = try await TestNode(
            "desktop",
            linking: try await laptop.cli("device", "link", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        )
        defer { desktop.remove() }
        try await desktop.start(peers: [laptop, bob])
        let laptopID = try #require(AuthorID(hex: try await laptop.nodeID()))
        let desktopID = try #require(AuthorID(hex: try await desktop.nodeID()))
        try await eventually("bob holds the desktop's account records", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.account(of: laptopID)?.devices.count } == 2
        }

        // The desktop is stolen, and the thief removes the laptop.
        try await desktop.cli("device", "remove", String(laptopID.hex.prefix(12)))
        try await eventually("bob's node takes the laptop as removed", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.account(of: laptopID) } == nil
        }

        // A third machine recovers the account through bob's node, and removes the desktop.
        let phone = try await TestNode(
            "phone",
            recovering: words,
            through: bob,
            removing: [String(desktopID.hex.prefix(12))]
        )
        defer { phone.remove() }
        let phoneID = try #require(AuthorID(hex: try await phone.nodeID()))
        let account = try #require(try await phone.withStore { try await $0.account(of: phoneID) })
        #expect(Set(account.devices) == [laptopID, phoneID], "the desktop removed, the laptop a device again")
        #expect(try await phone.withStore { try await $0.groups().map(\.name) } == ["Family"])
        try await phone.start(peers: [bob])
        try await eventually("bob's node: the desktop removed, the laptop and the phone devices", timeout: .seconds(20))
        {
            let devices = try await bob.withStore { try await $0.account(of: phoneID)?.devices }
            return devices.map(Set.init) == [laptopID, phoneID]
        }
        #expect(try await bob.withStore { try await $0.account(of: desktopID) } == nil)

        // The phone posts as alice; what the thief posts now reaches nobody.
        let post = try await phone.cli("post", phone.fixture("lake.png"), "--caption", "from the phone")
        let stolen = try await desktop.cli("post", desktop.fixture("forest.webp"), "--caption", "from the thief")
        try await eventually("bob shows the phone's post under alice's account and name", timeout: .seconds(20)) {
            let posts = try LinkTests.list(try await bob.cli("feed", "--json"), "posts")
            let shown = posts.first { $0["id"] as? String == post }
            return shown?["account"] as? String == account.account.hex && shown?["authorName"] as? String == "alice"
        }
        #expect(try await bob.withStore { try await $0.post(PostID(hex: stolen)!) } == nil)
        try await phone.stop()
        try await desktop.stop()
        try await bob.stop()
        try await laptop.stop()
    }

    @Test("a mistyped recovery code, and one no node there holds, are refused and store nothing")
    func recoveryRefused() async throws {
        let bob = try await TestNode("bob", network: false)
        defer { bob.remove() }
        try await bob.cli("group", "create", "Family")
        try await bob.start()
        let elsewhere = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-r-\(UUID())")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let typo = try await NodeBinary.run(
            ["recover", "thought", "audit", "--peer", "127.0.0.1:\(bob.port)", "--data", elsewhere.path]
        )
        #expect(typo.status != 0)
        #expect(typo.stderr.contains("12 words"), "\(typo.stderr)")
        // A valid code of an account bob's node does not hold.
        let stranger = try await TestNode("carol", network: false)
        defer { stranger.remove() }
        let words = try #require(stranger.recoveryCode).split(separator: " ").map(String.init)
        let unknown = try await NodeBinary.run(
            ["recover"] + words + ["--peer", "127.0.0.1:\(bob.port)", "--data", elsewhere.path]
        )
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("this node holds no account with that recovery code"), "\(unknown.stderr)")
        let bobID = try #require(AuthorID(hex: try await bob.nodeID()))
        #expect(try await bob.withStore { try await $0.account(of: bobID)?.devices.count } == 1)
        // The new machine's data directory holds no account: nothing was stored for it.
        let list = try await NodeBinary.run(["device", "list", "--json", "--data", elsewhere.path])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(try LinkTests.json(list.stdout)["account"] is NSNull, "\(list.stdout)")
        try await bob.stop()
    }
}
