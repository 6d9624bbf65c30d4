import ContinuumCore
import ContinuumStore
import Crypto
import Foundation
import Testing

/// The guest commands on a real node (Docs/CLI.md, "guest-link", "guests", "guest-remove"): the link's address is the
/// one the running node's API wrote, and a guest let in through the API is listed, removed, and its links closed.
@Suite("Guest commands: guest-link, guests, guest-remove")
struct GuestCLITests {
    @Test("guest-link prints the running web UI's address; a guest who joined is listed and removed; --close closes")
    func guestCommands() async throws {
        let alice = try await TestNode("Alice")
        defer { alice.remove() }
        try await alice.cli("group", "create", "Party")
        let early = try await alice.tryCLI("guest-link", "--group", "Party")
        #expect(early.status != 0 && early.stderr.contains("no web UI address is known"), "\(early.stderr)")
        let wrong = try await alice.tryCLI("guest-link", "--hours", "200")
        #expect(wrong.status != 0 && wrong.stderr.contains("--hours must be 1 to 168"), "\(wrong.stderr)")

        try await alice.start()
        let loopback = try await alice.tryCLI("guest-link", "--group", "Party")
        #expect(loopback.stderr.contains("phones cannot open this link"), "\(loopback.stderr)")
        let made = try await alice.cli("guest-link", "--group", "Party", "--json")
        let link = try #require(try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any])
        let url = try #require(link["url"] as? String)
        #expect(url.hasPrefix("http://127.0.0.1:\(alice.apiPort)/#guest="), "\(made)")
        #expect(link["groupName"] as? String == "Party" && link["expiresAt"] is String, "\(made)")

        // A guest's browser, played with keys the test holds: it founds its account and joins with the code.
        let device = NodeIdentity.generate()
        let log = NodeIdentity.generate()
        let founding = try device.sign(
            RecordContent(
                author: device.author,
                sequence: 1,
                previous: nil,
                createdAt: .now(),
                body: AccountRecord.founding(recovery: nil).body
            )
        )
        let code = String(url.split(separator: "=", maxSplits: 1)[1])
        let accepted = try await alice.http.send(
            "POST",
            "/api/browser/guest/accept",
            json: [
                "code": code, "name": "Gina", "device": device.author.hex, "log": log.author.hex,
                "record": Data(founding.bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""),
            ]
        )
        #expect(accepted.status == 201, "\(accepted.text)")
        let listed = try await alice.cli("guests")
        #expect(
            listed.contains("Gina  in Party  0 posts") && listed.contains("link to Party: open, 1 guests"),
            "\(listed)"
        )
        let removed = try await alice.cli("guest-remove", "Gina")
        #expect(removed == "Gina (\(device.author.short)) is removed", "\(removed)")
        let json = try await alice.cli("guests", "--json")
        let guests = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect((guests["guests"] as? [[String: Any]])?.first?["state"] as? String == "removed", "\(json)")
        let members = try await alice.cli("group", "members", "--group", "Party")
        #expect(members.contains("node \(device.author.short)  removed"), "\(members)")
        let unknown = try await alice.tryCLI("guest-remove", "Ivy")
        #expect(unknown.status != 0 && unknown.stderr.contains("no guest is called"), "\(unknown.stderr)")
        #expect(try await alice.cli("guest-link", "--close") == "closed 2 guest links")
        try await alice.stop()
        // Stopped, the node's web UI has no address to give.
        let stopped = try await alice.tryCLI("guest-link", "--group", "Party")
        #expect(stopped.status != 0 && stopped.stderr.contains("no web UI address is known"), "\(stopped.stderr)")
    }
}
