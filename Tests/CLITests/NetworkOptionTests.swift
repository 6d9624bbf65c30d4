import Foundation
import Testing

/// `run --network NAME` and `--network-key FILE`: bad input is refused at once, with the fix, and nothing is stored
/// (not even a new data directory).
@Suite("run: bad --network, --network-key and --api-* input", .serialized)
struct NetworkOptionTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let arguments: [String]
        let message: String
        let status: Int32
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(
            arguments: ["run", "--network", "a", "--network-key", "KEY"],
            message: "--network and --network-key both name the network; give only one of them",
            status: 64
        ),
        Case(arguments: ["run", "--network", " "], message: "--network is blank", status: 64),
        Case(
            arguments: ["run", "--network-key", "/nonexistent/network.key"],
            message: "cannot read --network-key '/nonexistent/network.key': no such file",
            status: 1
        ),
        Case(arguments: ["run", "--network-key", "EMPTY"], message: "is empty; put a key in it", status: 1),
        Case(arguments: ["run", "--network-key", "NEWLINES"], message: "is empty; put a key in it", status: 1),
        Case(arguments: ["run", "--network-key", "HUGE"], message: "is over 64 KiB", status: 1),
        Case(arguments: ["run", "--network-key", "DIRECTORY"], message: "cannot read --network-key", status: 1),
        Case(
            arguments: ["run", "--no-api", "--api-tls"],
            message: "--api-tls and --no-api: there is no API to serve over TLS",
            status: 64
        ),
        Case(arguments: ["run", "--api-listen", "localhost"], message: "is not HOST:PORT", status: 64),
        Case(arguments: ["run", "--api-token", "short"], message: "--api-token must be 16 or more", status: 64),
        Case(arguments: ["run", "--api-token", "0123456789abcdef;x"], message: "letters, digits", status: 64),
        Case(arguments: ["run", "--max-upload-mb", "0"], message: "--max-upload-mb must be 1 or more", status: 64),
    ]

    @Test("refused with a clear error, nothing stored", arguments: cases)
    func refused(_ item: Case) async throws {
        let files = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-keys-\(UUID())")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: files) }
        let paths = [
            "KEY": files.appendingPathComponent("good.key"), "EMPTY": files.appendingPathComponent("empty.key"),
            "NEWLINES": files.appendingPathComponent("newlines.key"), "HUGE": files.appendingPathComponent("huge.key"),
            "DIRECTORY": files,
        ]
        try Data("secret\n".utf8).write(to: paths["KEY"]!)
        try Data().write(to: paths["EMPTY"]!)
        try Data("\n\r\n".utf8).write(to: paths["NEWLINES"]!)
        try Data(count: 64 * 1024 + 1).write(to: paths["HUGE"]!)
        let arguments = item.arguments.map { paths[$0]?.path ?? $0 }

        // A fresh data directory stays absent.
        let fresh = CLI()
        defer { fresh.remove() }
        let result = try await fresh.run(arguments)
        #expect(result.status == item.status, "exit status; stderr: \(result.stderr)")
        #expect(result.stderr.contains(item.message), "stderr: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: fresh.data.path), "the data directory was created")

        // An existing one is unchanged.
        let cli = CLI()
        defer { cli.remove() }
        try await cli.ok("init", "--name", "Alice")
        try await cli.ok("post", cli.fixture("lake.png"), "--caption", "Lake")
        let before = try cli.snapshot()
        let again = try await cli.run(arguments)
        #expect(again.status == item.status)
        #expect(try cli.snapshot() == before, "the store changed")
    }
}
