import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Testing

/// One person on two devices across real nodes (PROTOCOL.md §2.10, §5.1, §7.8.19): the laptop makes a link code,
/// the desktop links with it and gets the account's name, groups and history, and another member shows what either
/// device posts under the one account and name.
@Suite("Linking a device: device link, init --link, one author on every node", .serialized)
struct LinkTests {
    @Test("the desktop links, gets the history, and bob shows both devices' posts under alice's account and name")
    func linkAndOneAuthor() async throws {
        let laptop = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        defer { for node in [laptop, bob] { node.remove() } }
        try await laptop.cli("group", "create", "Family")
        let first = try await laptop.cli("post", laptop.fixture("lake.png"), "--caption", "from the laptop")
        try await laptop.start()
        try await bob.start()
        let invite = try await laptop.cli("invite", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        try await bob.cli("join", invite)
        let account = try #require(try await Self.status(laptop)["account"] as? String)

        let link = try Self.json(
            try await laptop.cli("device", "link", "--host", "127.0.0.1", "--port", "\(laptop.port)", "--json")
        )
        #expect(link["account"] as? String == account)
        #expect(link["expiresAt"] is String)
        let code = try #require(link["code"] as? String)
        let desktop = try await TestNode("desktop", linking: code)
        defer { desktop.remove() }
        // The desktop is the account's second device, with the account's name, its group and its history.
        let desktopStatus = try await Self.status(desktop)
        #expect(desktopStatus["account"] as? String == account)
        #expect((desktopStatus["devices"] as? [String])?.count == 2)
        #expect(desktopStatus["name"] as? String == "alice")
        #expect(try await desktop.feedJSON().contains(first))

        try await desktop.start(peers: [laptop])
        let second = try await desktop.cli("post", desktop.fixture("forest.webp"), "--caption", "from the desktop")
        try await eventually("bob shows both posts under alice's account and name", timeout: .seconds(20)) {
            let posts = try Self.list(try await bob.cli("feed", "--json"), "posts")
            let byID = Dictionary(
                uniqueKeysWithValues: posts.compactMap { post in
                    (post["id"] as? String).map { ($0, post) }
                }
            )
            return [first, second].allSatisfy {
                byID[$0]?["account"] as? String == account && byID[$0]?["authorName"] as? String == "alice"
            }
        }
        let devices = try Self.list(try await laptop.cli("device", "list", "--json"), "devices")
        #expect(devices.count == 2)

        // The desktop edits, then deletes, the post the laptop made: bob's node applies both (PROTOCOL.md §4.4).
        try await desktop.cli("edit", first, "--caption", "edited on the desktop")
        try await eventually("bob shows the desktop's edit of the laptop's post", timeout: .seconds(20)) {
            let posts = try Self.list(try await bob.cli("feed", "--json"), "posts")
            return posts.first { $0["id"] as? String == first }?["caption"] as? String == "edited on the desktop"
        }
        try await desktop.cli("delete", first)
        try await eventually("bob's node applies the desktop's delete of the laptop's post", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.post(PostID(hex: first)!) } == nil
        }
        #expect(try await laptop.withStore { try await $0.post(PostID(hex: first)!) } == nil)
        try await desktop.stop()
        try await bob.stop()
        try await laptop.stop()
    }

    @Test("the desktop removes the laptop: what the laptop posts afterwards reaches nobody; what it posted stays")
    func removeTheLaptop() async throws {
        let laptop = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        defer { for node in [laptop, bob] { node.remove() } }
        try await laptop.cli("group", "create", "Family")
        let before = try await laptop.cli("post", laptop.fixture("lake.png"), "--caption", "before the removal")
        try await laptop.start()
        try await bob.start()
        try await bob.cli("join", try await laptop.cli("invite", "--host", "127.0.0.1", "--port", "\(laptop.port)"))
        let code = try await laptop.cli("device", "link", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        let desktop = try await TestNode("desktop", linking: code)
        defer { desktop.remove() }
        try await desktop.start(peers: [laptop, bob])
        let laptopID = try #require(try await Self.status(laptop)["id"] as? String)
        try await eventually("bob holds the desktop's account records", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.account(of: AuthorID(hex: laptopID)!)?.devices.count } == 2
        }

        let removed = try Self.json(try await desktop.cli("device", "remove", String(laptopID.prefix(12)), "--json"))
        #expect(removed["device"] as? String == laptopID)
        #expect((removed["kept"] as? Int ?? 0) >= 3, "the laptop's founding and add, its group record and post")
        try await eventually("bob's node knows the laptop removed", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.account(of: AuthorID(hex: laptopID)!) } == nil
        }
        let after = try await laptop.cli("post", laptop.fixture("forest.webp"), "--caption", "after the removal")
        let marker = try await desktop.cli("post", desktop.fixture("waterfall.jpg"), "--caption", "marker")
        try await eventually("bob has the desktop's marker", timeout: .seconds(20)) {
            try await bob.withStore { try await $0.post(PostID(hex: marker)!) } != nil
        }
        #expect(try await bob.withStore { try await $0.post(PostID(hex: after)!) } == nil)
        #expect(try await desktop.withStore { try await $0.post(PostID(hex: after)!) } == nil)
        #expect(
            try await bob.withStore { try await $0.post(PostID(hex: before)!) } != nil,
            "what it posted before stays"
        )
        try await eventually("the laptop is refused: not a member", timeout: .seconds(20)) {
            laptop.logText.contains("not a member")
        }
        try await desktop.stop()
        try await bob.stop()
        try await laptop.stop()
    }

    @Test("the devices of one account share their follows: a follow or unfollow on one is taken by the other")
    func followsMoveBetweenDevices() async throws {
        let laptop = try await TestNode("alice", network: false)
        let bob = try await TestNode("bob", network: false)
        defer { for node in [laptop, bob] { node.remove() } }
        try await laptop.cli("group", "create", "Family")
        try await laptop.start()
        try await bob.start()
        try await bob.cli("join", try await laptop.cli("invite", "--host", "127.0.0.1", "--port", "\(laptop.port)"))
        let bobs = try #require(PostID(hex: try await bob.cli("post", bob.fixture("lake.png"), "--caption", "Bob's")))
        let code = try await laptop.cli("device", "link", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        let desktop = try await TestNode("desktop", linking: code)
        defer { desktop.remove() }
        try await desktop.start(peers: [laptop])
        try await eventually("the desktop holds bob's post", timeout: .seconds(20)) {
            try await desktop.withStore { try await $0.post(bobs) } != nil
        }
        // A follow on the laptop: the desktop follows too.
        try await laptop.cli("follow", String(bobs.hex.prefix(12)))
        try await eventually("the desktop follows bob's post", timeout: .seconds(20)) {
            try await desktop.withStore { try await $0.followedPosts() }.contains(bobs)
        }
        // An unfollow on the desktop: the laptop unfollows.
        try await desktop.cli("unfollow", String(bobs.hex.prefix(12)))
        try await eventually("the laptop no longer follows bob's post", timeout: .seconds(20)) {
            !(try await laptop.withStore { try await $0.followedPosts() }.contains(bobs))
        }
        // Bob's node is no device of the account: it still follows its own post, which alice's devices unfollowed.
        #expect(try await bob.withStore { try await $0.followedPosts() }.contains(bobs))
        try await desktop.stop()
        try await bob.stop()
        try await laptop.stop()
    }

    @Test("a link code works once; an invite, a mistyped code and a device with an account already are refused")
    func linkRefused() async throws {
        let laptop = try await TestNode("alice", network: false)
        defer { laptop.remove() }
        try await laptop.cli("group", "create", "Family")
        try await laptop.start()
        let code = try await laptop.cli("device", "link", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        let desktop = try await TestNode("desktop", linking: code)
        defer { desktop.remove() }
        let thief = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-thief-\(UUID())")
        defer { try? FileManager.default.removeItem(at: thief) }
        let again = try await NodeBinary.run(["init", "--link", code, "--data", thief.path])
        #expect(again.status != 0)
        #expect(
            again.stderr.contains("this link code was already used; make a new one with 'device link'"),
            "\(again.stderr)"
        )
        let invite = try await laptop.cli("invite", "--host", "127.0.0.1", "--port", "\(laptop.port)")
        let wrong = try await NodeBinary.run(["init", "--link", invite, "--data", thief.path])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("this is an invite to a group, not a link code"), "\(wrong.stderr)")
        let typo = try await NodeBinary.run(["init", "--link", "not-a-code", "--data", thief.path])
        #expect(typo.status != 0)
        #expect(typo.stderr.contains("is not a link code"), "\(typo.stderr)")
        let founded = try await laptop.tryCLI("init", "--link", code)
        #expect(founded.status != 0)
        #expect(founded.stderr.contains("this device has an account already"), "\(founded.stderr)")
        // Nothing changed on the laptop: its account has the desktop alone as a second device.
        #expect(try Self.list(try await laptop.cli("device", "list", "--json"), "devices").count == 2)
        try await laptop.stop()
    }

    /// The `node` object of `status --json`.
    static func status(_ node: TestNode) async throws -> [String: Any] {
        try #require(try json(try await node.cli("status", "--json"))["node"] as? [String: Any])
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func list(_ text: String, _ key: String) throws -> [[String: Any]] {
        try #require(try json(text)[key] as? [[String: Any]])
    }
}
