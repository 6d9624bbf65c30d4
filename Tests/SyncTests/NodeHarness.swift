import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Logging
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One node: a data directory, and a `continuum-node run` process when started.
final class TestNode: @unchecked Sendable {
    // @unchecked: a TestNode is used by one test at a time, from one task; no state is shared across tasks.
    let name: String
    let data: URL
    private(set) var process: Process?
    /// The sync port, kept across restarts: one below the kernel's ephemeral range (``TestPorts``), so that no other
    /// node's outgoing connection takes it while this one is down; a test may set another before the first start.
    var port: Int
    /// The HTTP API's port (0 until started).
    private(set) var apiPort = 0
    private var runs = 0
    /// The recovery code's words `init` printed (nil for a node made otherwise).
    private(set) var recoveryCode: String?

    /// A new node; with `network`, in the test network (``network``), else in no group at all.
    init(_ name: String, data: URL? = nil, network: Bool = true) async throws {
        self.name = name
        port = try TestPorts.reserve()
        self.data =
            data ?? FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-\(name)-\(UUID())")
        let made =
            network
            ? try await cli("init", "--name", name, "--network", Self.network, "--json")
            : try await cli("init", "--name", name, "--json")
        let object = try JSONSerialization.jsonObject(with: Data(made.utf8)) as? [String: Any]
        recoveryCode = object?["recoveryCode"] as? String
    }

    /// A new device linked into the account of the node whose `device link` printed `code` (that node runs): its
    /// `init --link` must succeed.
    init(_ name: String, linking code: String) async throws {
        self.name = name
        port = try TestPorts.reserve()
        data = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-\(name)-\(UUID())")
        try await cli("init", "--link", code)
    }

    /// A new device that recovers an account with its recovery code through `peer` (which runs), removing the
    /// devices whose id prefixes are `removing`: its `recover` must succeed. `result` is its JSON.
    init(_ name: String, recovering words: String, through peer: TestNode, removing: [String] = []) async throws {
        self.name = name
        port = try TestPorts.reserve()
        data = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-sync-\(name)-\(UUID())")
        var arguments = ["recover"] + words.split(separator: " ").map(String.init)
        arguments += ["--peer", "127.0.0.1:\(peer.port)", "--json"]
        for device in removing { arguments += ["--remove", device] }
        let result = try await NodeBinary.run(arguments + ["--data", data.path])
        #expect(result.status == 0, "\(name): recover failed: \(result.stderr)")
    }

    /// The network group every test node joins at `init`, so that nodes share their posts as they did before groups;
    /// tests of groups themselves make their own.
    static let network = "continuum-tests"
    static var networkGroup: GroupID { GroupID(unchecked: Data(NetworkID.named(network).bytes)) }

    var log: URL { data.appendingPathComponent("test-run-\(runs).log") }
    var stdoutFile: URL { data.appendingPathComponent("test-run-\(runs).out") }

    /// Runs a CLI command on this node's data directory, which may fail: its status, stdout and stderr.
    func tryCLI(_ arguments: String...) async throws -> NodeBinary.Result {
        try await NodeBinary.run(arguments + ["--data", data.path])
    }

    /// Runs a CLI command on this node's data directory; it must succeed. Returns trimmed stdout.
    @discardableResult
    func cli(_ arguments: String...) async throws -> String {
        let result = try await NodeBinary.run(arguments + ["--data", data.path])
        #expect(result.status == 0, "\(name): \(arguments) failed: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs a CLI command that waits (such as `join --ask`) in a task of its own: await the task for its result.
    func cliInBackground(_ arguments: String...) -> Task<NodeBinary.Result, any Error> {
        let arguments = arguments + ["--data", data.path]
        return Task { try await NodeBinary.run(arguments) }
    }

    func fixture(_ file: String) -> String { NodeBinary.fixtures.appendingPathComponent(file).path }

    /// Starts `run` on 127.0.0.1 and a free port, and waits for it to listen.
    func start(peers: [TestNode] = [], remembered: Bool = false, extra: [String] = []) async throws {
        runs += 1
        let process = Process()
        process.executableURL = NodeBinary.url
        var arguments = [
            "run", "--data", data.path, "--listen", "127.0.0.1", "--port", "\(port)", "--log-level", "info",
            "--api-listen", "127.0.0.1:0",
        ]
        if !remembered { arguments.append("--no-remembered-peers") }
        for peer in peers { arguments += ["--peer", "127.0.0.1:\(peer.port)"] }
        process.arguments = arguments + extra
        // No system D-Bus: LAN discovery finds no avahi-daemon (never a real one of this machine), says so once, and
        // the node syncs over --peer. Discovery itself is tested in network namespaces (scripts/netns-e2e.sh).
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/continuum-test-no-system-bus"
        process.environment = environment
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        _ = FileManager.default.createFile(atPath: stdoutFile.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: stdoutFile)
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        self.process = process
        do {
            try await waitForListening(process, extra: extra)
        } catch {
            Issue.record("\(name)'s log:\n\(logText)")
            throw error
        }
    }

    /// Waits (at most 60 s) for the node's "listening on" line, and "api on" unless `--no-api`; reads their ports.
    private func waitForListening(_ process: Process, extra: [String]) async throws {
        try await eventually("\(name) listening", timeout: .seconds(60)) {
            // A node that exited (it could not listen, say) fails the test now, with its status and log.
            guard process.isRunning else {
                Issue.record("\(name) exited (status \(process.terminationStatus)) before it listened")
                throw CancellationError()
            }
            let text = (try? String(contentsOf: stdoutFile, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n")
            guard let line = lines.first(where: { $0.hasPrefix("listening on ") }),
                let port = Int(line.split(separator: ":").last ?? "")
            else { return false }
            if !extra.contains("--no-api") {
                // "api on http://127.0.0.1:PORT/" (with "?token=..." when there is one).
                guard let api = lines.first(where: { $0.hasPrefix("api on ") }),
                    let apiPort = Int(api.split(separator: ":").last?.split(separator: "/").first ?? "")
                else { return false }
                self.apiPort = apiPort
            }
            self.port = port
            return true
        }
    }

    /// SIGINT, and a clean exit within 10 s.
    func stop() async throws {
        guard let process else { return }
        kill(process.processIdentifier, SIGINT)
        try await eventually("\(name) stopped", timeout: .seconds(10)) { !process.isRunning }
        #expect(process.terminationStatus == 0, "\(name) exit status; log: \(logText)")
        self.process = nil
    }

    /// SIGKILL: a crash, and the process gone.
    func crash() async throws {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        try await eventually("\(name) killed", timeout: .seconds(10)) { !process.isRunning }
        self.process = nil
    }

    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Every log of every run so far.
    var allLogs: String {
        (1...max(1, runs)).map { run in
            (try? String(contentsOf: data.appendingPathComponent("test-run-\(run).log"), encoding: .utf8)) ?? ""
        }.joined(separator: "\n")
    }

    func remove() {
        if let process, process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: data)
    }

    /// The store, opened read-only for checks (SQLite lets the running node keep writing).
    func withStore<T>(_ body: (ContinuumStore) async throws -> T) async throws -> T {
        let store = try ContinuumStore.open(DataDirectory(url: data), logger: Logger(label: "test"))
        defer { try? store.close() }
        return try await body(store)
    }

    /// The file of a photo the node holds: a small photo that came whole from a peer is kept in the store, and
    /// written out as its file first (as `continuum-node fetch` does).
    func photoFile(_ hash: AssetHash) async throws -> URL {
        try await withStore { try await $0.photoFile(hash) }
    }

    func feedJSON() async throws -> String { try await cli("feed", "--json", "--limit", "500") }

    func postIDs() async throws -> [PostID] {
        try await withStore { try await $0.feed(FeedQuery(limit: 500)).posts.map(\.id) }
    }

    /// An HTTP client for this node's API.
    var http: HTTPTestClient { HTTPTestClient(port: apiPort) }

    /// The clock a peer of the test network is shown: the logs of that group (not, for one, the name the node keeps
    /// under its node key, which no group shares).
    func clock() async throws -> VectorClock {
        try await withStore { store in
            let view = try await store.membershipView()
            // The network group's logs, and the account logs of their nodes (PROTOCOL.md §2.10), as a session shows.
            return VectorClock(
                try await store.clock().heads.filter {
                    view.logs[$0.key]?.group == Self.networkGroup
                        || view.carriesAccountLog($0.key, in: [Self.networkGroup])
                }
            )
        }
    }
}

/// Polls until the condition holds, or fails the test after the timeout.
///
/// The first looks come quickly (20 ms apart), then further apart, up to 250 ms: many conditions run a CLI command
/// (a process each), and a poll every 50 ms of a condition that takes seconds to come true was a process start every
/// 50 ms that the machine could not spare for the nodes under test.
func eventually(
    _ what: String,
    timeout: Duration = .seconds(30),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    var interval = Duration.milliseconds(20)
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
        interval = min(interval * 2, .milliseconds(250))
    }
    Issue.record("timed out waiting for: \(what)")
    throw CancellationError()
}

extension Sequence {
    /// `map` with an async transform, one element after the other, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async throws -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }

    /// `allSatisfy` with an async predicate, stopping at the first element that fails it.
    func asyncAllSatisfy(_ predicate: (Element) async throws -> Bool) async throws -> Bool {
        for element in self where !(try await predicate(element)) { return false }
        return true
    }
}
