import ArgumentParser
import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench crowd --join-by-invite`: a crowd whose nodes are in no group until each joins one through an
/// invite from the first node, one after the other, as a family does when one person invites everyone. Every node is
/// told of every other by id (as LAN discovery tells it). Once the joins are done and the crowd has settled, the
/// sessions each node holds, beside the bound: the sessions on which a join completed must count toward it once the
/// joiner holds the group's history (PROTOCOL.md §7.8.18), so that the inviter does not keep one per joiner for good.
extension CrowdBench {
    /// What the run by invite measured.
    struct InviteFigures {
        /// Seconds the joins took, one after the other, and the settling after them.
        var joins = 0.0
        var settle = 0.0
        /// Sessions the inviter held once the last join was done, and once the crowd had settled.
        var inviterAfterJoins = 0
        var inviter = 0
        /// Once settled, per node: every session, and those that count toward the bound.
        var all: [Int] = []
        var counted: [Int] = []
        /// Whether every node held the same logs (every member's), at least one per node, when it settled.
        var converged = false

        func print(maxPeers: Int) {
            say(
                "by invite (--max-peers \(maxPeers)): joins took \(format(joins, 1)) s, settled "
                    + "\(format(settle, 1)) s later",
                [
                    "invites.joinsSeconds": joins, "invites.settledSeconds": settle,
                    "invites.inviterSessionsAfterJoins": Double(inviterAfterJoins),
                    "invites.inviterSessions": Double(inviter), "invites.sessionsMax": Double(all.max() ?? 0),
                    "invites.countedMax": Double(counted.max() ?? 0), "invites.bound": Double(maxPeers),
                    "invites.converged": converged ? 1 : 0,
                ]
            )
            say(
                "          the inviter's sessions: \(inviterAfterJoins) once the last join was done, \(inviter) once "
                    + "settled"
            )
            say(
                "          sessions per node once settled: max \(all.max() ?? 0) (median "
                    + "\(format(median(all.map(Double.init)), 1))); bound \(maxPeers)"
            )
            say(
                "          counting toward the bound: max \(counted.max() ?? 0) (every session: a join's counts once the "
                    + "joiner holds the history)"
            )
            if !converged { say("          the crowd did not converge: some node lacks some member's log") }
            let over = counted.indices.filter { counted[$0] > maxPeers }
            say(
                over.isEmpty
                    ? "          no node above the bound"
                    : "          above the bound: nodes \(over.map(String.init).joined(separator: ", "))"
            )
        }
    }

    /// The run by invite: the crowd started in no group, node 0 founds one and invites every other node, each joins,
    /// then the crowd settles and the sessions are counted.
    func measureInvites(maxPeers: Int, root: URL) async throws -> InviteFigures {
        let logger = Logger(label: "bench")
        var crowd: [InvitedNode] = []
        defer { for node in crowd { node.stop() } }
        for index in 0..<nodes {
            crowd.append(try InvitedNode(root.appendingPathComponent("n\(index)"), name: "n\(index)", logger: logger))
        }
        _ = try crowd[0].command(["group", "create", "crowd"])
        let ids = try crowd.map { try IdentityFile.loadOrCreate(at: $0.directory.identityURL).0.author }
        let ports = try (0..<nodes).map { _ in try TestPorts.reserve() }
        for (index, node) in crowd.enumerated() {
            var extra = ["--max-peers", "\(maxPeers)"] + nodeOptions
            for other in 0..<nodes where other != index {
                extra += ["--peer", "\(ids[other].hex)@127.0.0.1:\(ports[other])"]
            }
            try node.start(port: ports[index], extra: extra)
        }
        var figures = InviteFigures()
        let started = ContinuousClock.now
        for joiner in crowd.dropFirst() {
            let code = try crowd[0].command(["invite", "--host", "127.0.0.1", "--port", "\(ports[0])"])
            _ = try joiner.command(["join", code])
        }
        figures.joins = seconds(since: started)
        figures.inviterAfterJoins = Self.connected(crowd[0].directory).count
        let settling = ContinuousClock.now
        figures.converged = try await settleInvited(crowd)
        figures.settle = seconds(since: settling)
        let sessions = crowd.map { Self.connected($0.directory) }
        figures.inviter = sessions[0].count
        figures.all = sessions.map(\.count)
        // Outside the bound: a join's session until the joiner holds the history, none once settled. (A joiner no
        // longer keeps the address it joined at connected, PROTOCOL.md §7.8.13: every session counts.)
        figures.counted = sessions.map(\.count)
        return figures
    }

    /// Waits (at most 180 s: a joiner's neighbours that refused it before it joined are dialled again within 20 s,
    /// as suspects) until every node holds the same logs, at least one per node, and the session counts stopped
    /// changing for 3 s. Returns whether the logs agreed.
    func settleInvited(_ crowd: [InvitedNode]) async throws -> Bool {
        let started = ContinuousClock.now
        var stable = 0
        var last: [Int] = []
        var agreed = false
        while seconds(since: started) < 180 {
            let authors = try await crowd.asyncMap { try await $0.store.counts().authors }
            let sessions = crowd.map { Self.connected($0.directory).count }
            agreed = authors.allSatisfy { $0 == authors[0] } && authors[0] >= nodes
            if agreed, sessions == last { stable += 1 } else { stable = 0 }
            last = sessions
            if stable >= 3 { break }
            try await Task.sleep(for: .seconds(1))
        }
        return agreed
    }
}

/// A data directory in no group and, when started, a `continuum-node run` process on it (``BenchNode`` puts every
/// node in the bench's network group, which this run must not).
final class InvitedNode {
    let directory: DataDirectory
    let store: ContinuumStore
    private var process: Process?

    /// A new data directory: its identity and display name (`init --name`), in no group.
    init(_ url: URL, name: String, logger: Logger) throws {
        directory = DataDirectory(url: url)
        _ = try Self.run(["init", "--data", url.path, "--name", name])
        store = try ContinuumStore.open(directory, logger: logger)
    }

    /// Runs `continuum-node ARGUMENTS --data DIR` to its end; returns what it printed on stdout, trimmed. Throws when
    /// it fails, with what it printed on stderr.
    func command(_ arguments: [String]) throws -> String {
        try Self.run(arguments + ["--data", directory.path])
    }

    private static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = BenchNode.binary
        process.arguments = arguments
        let (out, err) = (Pipe(), Pipe())
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // The commands print little: stdout is read to its end, then stderr, without filling either pipe.
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError(
                "'continuum-node \(arguments.first ?? "")' failed: \(String(decoding: errors, as: UTF8.self))"
            )
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Starts `continuum-node run` on 127.0.0.1:`port` with `extra` options; returns once it listens.
    func start(port: Int, extra: [String]) throws {
        let output = directory.url.appendingPathComponent("bench.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        process.executableURL = BenchNode.binary
        process.arguments =
            [
                "run", "--data", directory.path, "--listen", "127.0.0.1", "--port", "\(port)", "--no-remembered-peers",
                "--anti-entropy-interval", "0", "--log-level", "error", "--no-api",
            ] + extra
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.standardError
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            if text.split(separator: "\n").contains(where: { $0.hasPrefix("listening on ") }) { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ValidationError("the node at \(directory.path) did not start")
    }

    func stop() {
        guard let process else { return }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        self.process = nil
    }
}
