import ContinuumTestSupport
import Foundation
import Testing

/// Every command that can be given bad input: the error a person sees, that the node keeps working, and that the
/// store is unchanged.
@Suite("Bad input: a clear error, and nothing stored", .serialized)
struct BadInputTests {
    /// A store holding one post by "Alice" with a comment, plus 17 more posts so that some 1-digit prefix is
    /// ambiguous (17 ids, 16 possible first digits): made once with the binary, then copied for each test.
    static func populated() async throws -> (CLI, post: String) {
        let (template, post) = try await Self.template.value
        let cli = CLI()
        try FileManager.default.copyItem(at: template.data, to: cli.data)
        return (cli, post)
    }

    /// The populated store, made on first use (twenty runs of the binary, once for the whole suite).
    static let template = Task {
        let cli = CLI()
        try await cli.ok("init", "--name", "Alice")
        let post = try await cli.ok("post", cli.fixture("waterfall.jpg"), "--caption", "Waterfall")
        try await cli.ok("comment", post, "first!")
        for index in 0..<17 { try await cli.ok("post", cli.fixture("lake.png"), "--caption", "Lake \(index)") }
        return (cli, post)
    }

    struct Case: CustomTestStringConvertible, Sendable {
        let arguments: [String]
        let message: String
        let status: Int32
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let longCaption = String(repeating: "é", count: 1025)

    static let cases: [Case] = [
        Case(arguments: ["post", "FIXTURE:not-an-image.jpg", "--caption", "x"], message: "not an image", status: 1),
        Case(
            arguments: ["post", "FIXTURE:truncated.jpg", "--caption", "x"],
            message: "corrupt JPEG image: the file ends before the end-of-image marker",
            status: 1
        ),
        Case(
            arguments: ["post", "FIXTURE:media/garbage-after-header.jpg", "--caption", "x"],
            message: "garbage-after-header.jpg: the image is damaged: Corrupt JPEG data",
            status: 1
        ),
        Case(
            arguments: ["post", "FIXTURE:lake.png", "--caption", "x", "--taken-at", "yesterday"],
            message: "--taken-at 'yesterday' is not an RFC 3339 time",
            status: 64
        ),
        Case(arguments: ["post", "/nonexistent/photo.jpg", "--caption", "x"], message: "cannot read", status: 1),
        Case(arguments: ["post", "FIXTURE:lake.png"], message: "a caption is required", status: 64),
        Case(arguments: ["post", "FIXTURE:lake.png", "--caption", "  \n "], message: "must not be blank", status: 64),
        Case(
            arguments: ["post", "FIXTURE:lake.png", "--caption", longCaption],
            message: "caption is 2050 bytes; the limit is 2048",
            status: 1
        ),
        Case(
            arguments: ["post", "FIXTURE:lake.png", "--caption", "x", "--location", "91,0"],
            message: "not LAT,LON",
            status: 64
        ),
        Case(
            arguments: ["post", "FIXTURE:media/gps.heic", "--caption", "x"],
            message: "gps.heic: this HEIC says where it was taken (a GPS position), and exiv2 cannot write HEIC files, "
                + "so it cannot be removed without re-encoding the photo; pass --keep-metadata to post it as it is",
            status: 1
        ),
        Case(
            arguments: ["post", "FIXTURE:media/gps-xmp.gif", "--caption", "x"],
            message: "gps-xmp.gif: this GIF holds XMP metadata, which may say where it was taken",
            status: 1
        ),
        Case(
            arguments: ["post", "FIXTURE:lake.png", "--caption", "x", "--location-from-photo"],
            message: "lake.png: the photo has no GPS position in its metadata to share; give one with --location",
            status: 1
        ),
        Case(
            arguments: [
                "post", "FIXTURE:media/gps.jpg", "--caption", "x", "--location", "1,2", "--location-from-photo",
            ],
            message: "give either --location LAT,LON or --location-from-photo, not both",
            status: 64
        ),
        Case(arguments: ["comment", "0000000000", "hello"], message: "no post matches '0000000000'", status: 1),
        Case(arguments: ["comment", "not-hex", "hello"], message: "is not an id", status: 1),
        Case(arguments: ["comment", "POST", "   "], message: "the comment is blank", status: 64),
        Case(arguments: ["comment", "AMBIGUOUS", "hi"], message: "matches several", status: 1),
        Case(arguments: ["show", "AMBIGUOUS"], message: "matches several", status: 1),
        Case(arguments: ["edit", "POST", "--caption", ""], message: "the new caption is blank", status: 64),
        Case(arguments: ["edit", "COMMENT", "--caption", "x"], message: "is a comment", status: 1),
        Case(arguments: ["delete", "POST", "0000000000"], message: "no post or comment matches", status: 1),
        Case(arguments: ["feed", "--cursor", "garbage"], message: "malformed cursor", status: 1),
        Case(
            arguments: ["feed", "--since", "yesterday"],
            message: "--since 'yesterday' is not a duration",
            status: 64
        ),
        Case(arguments: ["feed", "--limit", "0"], message: "--limit must be 1 to 500", status: 64),
        Case(arguments: ["feed", "--radius-km", "5"], message: "--radius-km needs --near", status: 64),
        Case(arguments: ["feed", "--near", "91,2"], message: "--near '91,2' is not LAT,LON", status: 64),
        Case(
            arguments: ["feed", "--near", "xyzzyville"],
            message: "--near 'xyzzyville' is neither LAT,LON in decimal degrees nor a city this node knows",
            status: 1
        ),
        Case(arguments: ["feed", "--author", "0000000000"], message: "no known author matches", status: 1),
        Case(arguments: ["search", " "], message: "the search term is blank", status: 64),
        Case(arguments: ["search"], message: "the search term is blank", status: 64),
        Case(arguments: ["init", "--name", " "], message: "--name is blank", status: 64),
        Case(
            arguments: ["init", "--name", String(repeating: "n", count: 65)],
            message: "name is 65 bytes; the limit is 64",
            status: 1
        ),
        Case(arguments: ["follow", "0000000000"], message: "no post matches '0000000000'", status: 1),
        Case(arguments: ["follow", "not-hex"], message: "is not an id", status: 1),
        Case(arguments: ["follow", "AMBIGUOUS"], message: "matches several", status: 1),
        Case(arguments: ["unfollow", "0000000000"], message: "no post matches '0000000000'", status: 1),
        Case(arguments: ["notifications", "--mark-read", "9999"], message: "no notification 9999", status: 1),
        Case(arguments: ["notifications", "--mark-read"], message: "--mark-read needs the numbers", status: 64),
        Case(arguments: ["notifications", "5"], message: "only taken with --mark-read", status: 64),
        Case(arguments: ["notifications", "--mark-read", "x1"], message: "'x1' is not a notification", status: 64),
        Case(
            arguments: ["notifications", "--mark-read", "--all", "3"],
            message: "either notification numbers or --all",
            status: 64
        ),
        Case(arguments: ["notifications", "--all"], message: "--all goes with --mark-read", status: 64),
        Case(arguments: ["notifications", "--limit", "0"], message: "--limit must be 1 to 1000", status: 64),
        Case(arguments: ["watch"], message: "no node is running", status: 1),
        Case(
            arguments: ["recover"]
                + "thought audit rib six fury initial photo diary typical guess knife test".split(
                    separator: " "
                ).map(String.init) + ["--peer", "127.0.0.1:9"],
            message: "this device has an account already (its key signed records): recover on a new data directory",
            status: 1
        ),
        Case(
            arguments: ["recover", "thought", "audit", "--peer", "127.0.0.1:9"],
            message: "a recovery code is 12 words; 2 words were given",
            status: 1
        ),
        Case(
            arguments: ["recover", "thought", "--peer", "nowhere"],
            message: "--peer must be HOST:PORT",
            status: 64
        ),
        Case(
            arguments: ["run", "--listen", "127.0.0.1", "--port", "TAKEN", "--no-api", "--no-remembered-peers"],
            message: "Address already in use; choose another --port or --listen",
            status: 1
        ),
        Case(
            arguments: ["export", "POST", "--to", "EXISTING"],
            message: "already exists; nothing was written",
            status: 1
        ),
    ]

    @Test("refused with a clear error, the store unchanged, and the node still works", arguments: cases)
    func refused(_ item: Case) async throws {
        let (cli, post) = try await Self.populated()
        defer { cli.remove() }
        let comment = try #require(
            (try await cli.run("show", post, "--json").json()["comments"] as? [[String: Any]])?.first?["id"] as? String
        )
        let ids = try await cli.feedIDs()
        let ambiguous = try #require(
            Dictionary(grouping: ids, by: { String($0.prefix(1)) }).first { $0.value.count > 1 }?.key
        )
        let existing = cli.data.appendingPathComponent("export")
        try FileManager.default.createDirectory(at: existing, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(
            atPath: existing.appendingPathComponent("\(post.prefix(12)).txt").path,
            contents: Data("mine".utf8)
        )
        // A port another program listens on, for `run --port TAKEN`.
        let taken = try TestPorts.Listener()
        defer { taken.close() }
        let arguments = item.arguments.map { argument in
            switch argument {
            case "TAKEN": "\(taken.port)"
            case "POST": post
            case "COMMENT": comment
            case "AMBIGUOUS": ambiguous
            case "EXISTING": existing.path
            case let fixture where fixture.hasPrefix("FIXTURE:"): cli.fixture(String(fixture.dropFirst(8)))
            default: argument
            }
        }
        let before = try cli.snapshot()
        let result = try await cli.run(arguments)
        #expect(result.status == item.status, "exit status; stderr: \(result.stderr)")
        #expect(result.stderr.contains(item.message), "stderr: \(result.stderr)")
        #expect(try cli.snapshot() == before, "the store changed")
        #expect(
            try String(contentsOf: existing.appendingPathComponent("\(post.prefix(12)).txt"), encoding: .utf8) == "mine"
        )
        // Still working: a good command succeeds afterwards.
        #expect(try await cli.ok("comment", post, "still here").count == 64)
    }

    @Test("a second group named as one the node is in (case and accents aside) is refused; nothing is stored")
    func sameGroupName() async throws {
        let cli = CLI()
        defer { cli.remove() }
        try await cli.ok("init", "--name", "Alice")
        try await cli.ok("group", "create", "Party")
        let before = try cli.snapshot()
        let result = try await cli.run("group", "create", "PARTY")
        #expect(result.status == 1, "stderr: \(result.stderr)")
        #expect(result.stderr.contains("in a group named 'Party' already"), "stderr: \(result.stderr)")
        #expect(result.stderr.contains("another name"), "stderr: \(result.stderr)")
        #expect(try cli.snapshot() == before, "the store changed")
        #expect(try await cli.ok("group", "create", "Party at Bob's").contains("created group"))
    }

    @Test("edit and delete of another author's post or comment are refused, naming the owner")
    func notOwner() async throws {
        let (cli, post) = try await Self.populated()
        defer { cli.remove() }
        let comment = try #require(
            (try await cli.run("show", post, "--json").json()["comments"] as? [[String: Any]])?.first?["id"] as? String
        )
        // Become someone else on the same store: another identity's key.
        let other = CLI()
        defer { other.remove() }
        try await other.ok("init")
        let key = cli.data.appendingPathComponent("identity.key")
        try FileManager.default.removeItem(at: key)
        try FileManager.default.copyItem(at: other.data.appendingPathComponent("identity.key"), to: key)
        let before = try cli.snapshot()
        for arguments in [["edit", post, "--caption", "mine now"], ["delete", post], ["delete", comment]] {
            let result = try await cli.run(arguments)
            #expect(result.status == 1)
            #expect(result.stderr.contains("belongs to Alice"), "stderr: \(result.stderr)")
            #expect(result.stderr.contains("only its author can change or delete it"))
            #expect(try cli.snapshot() == before)
        }
        #expect(try await cli.ok("comment", post, "a visitor's comment").count == 64)
    }

    @Test("a corrupt or exposed identity key stops writes with the fix, while reading still works")
    func badKey() async throws {
        let (cli, post) = try await Self.populated()
        defer { cli.remove() }
        let key = cli.data.appendingPathComponent("identity.key")
        let before = try cli.snapshot()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key.path)
        let exposed = try await cli.run("comment", post, "hello")
        #expect(exposed.status == 1 && exposed.stderr.contains("chmod 600 '\(key.path)'"))
        try Data("garbage\n".utf8).write(to: key)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
        let corrupt = try await cli.run("post", cli.fixture("lake.png"), "--caption", "x")
        #expect(corrupt.status == 1 && corrupt.stderr.contains("identity key \(key.path) is corrupt"))
        #expect(try cli.snapshot() == before)
        #expect(try await cli.feedIDs().count == 18)
    }
}
