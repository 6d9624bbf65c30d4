import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import GRDB
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench crowd`: N real nodes on loopback, each told of every other by id (`--peer ID@HOST:PORT`, as LAN
/// discovery tells it), first with the overlay's bound (`--max-peers`), then as a full mesh (`--max-peers 0`, the
/// behaviour before the overlay) in the same run. Posts with photos are written on nodes spread over the crowd. With
/// `--join-by-invite`, the nodes instead join one group through invites from the first node, and the bench reports
/// their sessions beside the bound (``measureInvites(maxPeers:root:)``).
struct CrowdBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "crowd",
        abstract: "A crowd of nodes on one network: sessions, copies of each record, spread time, photo load."
    )

    @Option(help: "Nodes started.")
    var nodes = 50

    @Option(help: "Posts written, each with a photo, on nodes spread over the crowd.")
    var posts = 50

    @Option(name: .customLong("photo-kb"), help: "Size of each post's photo, in KiB.")
    var photoKB = 64

    @Option(name: .customLong("interval-ms"), help: "Time between two posts, in milliseconds.")
    var intervalMS = 1000

    @Option(name: .customLong("max-peers"), help: "The bound on sessions of the measured run.")
    var maxPeers = 8

    @Option(name: .customLong("node-option"), help: "An option passed to every node (repeatable).")
    var nodeOptions: [String] = []

    @Flag(name: .customLong("no-full-mesh"), help: "Skip the full-mesh baseline.")
    var noFullMesh = false

    @Flag(
        name: .customLong("join-by-invite"),
        help: """
            Start the nodes in no group; each joins one through an invite from the first node. Prints the sessions \
            per node once the joins are done and the crowd settled, beside the bound (no posts, no full mesh).
            """
    )
    var joinByInvite = false

    @Option(help: "Where to put the data directories (default: a temporary directory, removed afterwards).")
    var scratch: String?

    @OptionGroup var output: ReportOptions

    func measure() async throws {
        let root = URL(fileURLWithPath: scratch ?? NSTemporaryDirectory())
            .appendingPathComponent("continuum-bench-crowd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        if joinByInvite {
            say(
                "continuum-bench crowd --join-by-invite: \(nodes) nodes on loopback, TLS, each told of every other by "
                    + "id, in no group; node 0 founds one and invites every other node, which joins in turn"
            )
            try await measureInvites(maxPeers: maxPeers, root: root.appendingPathComponent("invites"))
                .print(maxPeers: maxPeers)
            return
        }
        say(
            "continuum-bench crowd: \(nodes) nodes on loopback, TLS, each told of every other by id; \(posts) posts "
                + "with a \(photoKB) KiB photo each, written \(intervalMS) ms apart on nodes spread over the crowd"
        )
        let bounded = try await measure(maxPeers: maxPeers, root: root.appendingPathComponent("bounded"))
        bounded.print("overlay (--max-peers \(maxPeers))", as: "overlay")
        if !noFullMesh {
            let mesh = try await measure(maxPeers: 0, root: root.appendingPathComponent("mesh"))
            mesh.print("baseline: full mesh (--max-peers 0)", as: "mesh")
            say(
                "ratios    copies per record \(format(bounded.copiesMean / mesh.copiesMean, 2))x the mesh's; bytes in "
                    + "per node \(format(bounded.bytesInMean / mesh.bytesInMean, 2))x; spread time p99 "
                    + "\(format(bounded.spreadP99 / mesh.spreadP99, 2))x"
            )
        }
        say("targets   sessions <= 8; copies <= 1.5 per record per node (mean); p99 spread <= 2 s; busiest <= 3x mean")
    }

    struct Figures {
        var sessionsMax = 0
        var sessionsMedian = 0.0
        var copiesMean = 0.0
        var copiesMax = 0.0
        var spreadP50 = 0.0
        var spreadP99 = 0.0
        var servedBusiest = 0.0
        var servedMean = 0.0
        var bytesInMean = 0.0
        var bytesInMax = 0.0
        var rssMaxMiB = 0.0
        var settle = 0.0
        var prunes = 0
        var grafts = 0
        var announced = 0

        /// Prints the figures under `title`, and adds them to the run's report under `prefix`.
        func print(_ title: String, as prefix: String) {
            say(
                title,
                [
                    "\(prefix).sessionsMax": Double(sessionsMax), "\(prefix).sessionsMedian": sessionsMedian,
                    "\(prefix).copiesMean": copiesMean, "\(prefix).copiesMax": copiesMax,
                    "\(prefix).spreadP50Ms": spreadP50 * 1000, "\(prefix).spreadP99Ms": spreadP99 * 1000,
                    "\(prefix).busiestToMean": servedBusiest / max(1, servedMean),
                    "\(prefix).bytesInMeanMiB": bytesInMean / 1_048_576, "\(prefix).rssMaxMiB": rssMaxMiB,
                    "\(prefix).settledSeconds": settle,
                ]
            )
            say("          sessions per node: max \(sessionsMax), median \(format(sessionsMedian, 1))")
            say(
                "          copies of each record received per node: mean \(format(copiesMean, 2)), max "
                    + "\(format(copiesMax, 2))"
            )
            say(
                "          time for a post to reach every node: p50 \(format(spreadP50 * 1000, 0)) ms, p99 "
                    + "\(format(spreadP99 * 1000, 0)) ms"
            )
            say(
                "          bytes served (records and photos): busiest node \(format(servedBusiest / 1_048_576, 1)) MiB"
                    + " = \(format(servedBusiest / max(1, servedMean), 2))x the mean (\(format(servedMean / 1_048_576, 1)) MiB)"
            )
            say(
                "          bytes in per node: mean \(format(bytesInMean / 1_048_576, 2)) MiB, max "
                    + "\(format(bytesInMax / 1_048_576, 2)) MiB; peak RSS of a node: max \(format(rssMaxMiB, 0)) MiB; "
                    + "settled in \(format(settle, 1)) s"
            )
            say(
                "          tree push during the posts: \(prunes) links pruned, \(grafts) grafted, \(announced) records "
                    + "announced (HAVE) in place of sent"
            )
        }
    }

    /// One run: starts the crowd with this bound on sessions, waits until it settles, writes the posts, waits until
    /// every node holds every photo, and reads the figures off the nodes.
    func measure(maxPeers: Int, root: URL) async throws -> Figures {
        let logger = Logger(label: "bench")
        var crowd: [BenchNode] = []
        defer { for node in crowd { try? node.stop() } }
        try startCrowd(&crowd, maxPeers: maxPeers, root: root, logger: logger)
        var figures = Figures()
        figures.settle = try await settle(crowd)

        let before = crowd.map(Self.traffic)
        var (written, sessionSamples) = try await writePosts(on: crowd)
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline {
            let photos = try await crowd.asyncMap { try await $0.store.counts().photos }
            if photos.allSatisfy({ $0 >= posts }) { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        sessionSamples += crowd.map { Self.connected($0).count }
        let after = crowd.map(Self.traffic)

        figures.sessionsMax = sessionSamples.max() ?? 0
        figures.sessionsMedian = median(sessionSamples.map(Double.init))
        addTraffic(to: &figures, before: before, after: after, written: written)
        figures.rssMaxMiB = Double(crowd.map { $0.peakRSS() }.max() ?? 0) / 1024
        let spreads = try Self.spreads(of: written, over: crowd)
        figures.spreadP50 = median(spreads)
        figures.spreadP99 = percentile(spreads, 99)
        return figures
    }

    /// A post the bench wrote: its record, when (milliseconds since 1970), and the index of the node that wrote it.
    struct WrittenPost {
        var id: RecordID
        var at: Int64
        var author: Int
    }

    /// Creates the crowd's nodes in `crowd` (so that the caller stops those started, whatever fails) and starts each
    /// with `--max-peers` and every other node as a `--peer ID@HOST:PORT`.
    func startCrowd(_ crowd: inout [BenchNode], maxPeers: Int, root: URL, logger: Logger) throws {
        for index in 0..<nodes {
            crowd.append(try BenchNode(root.appendingPathComponent("n\(index)"), logger: logger))
        }
        let ids = try crowd.map { try IdentityFile.loadOrCreate(at: $0.directory.identityURL).0.author }
        let ports = try (0..<nodes).map { _ in try TestPorts.reserve() }
        let everyone = (0..<nodes).map { "\(ids[$0].hex)@127.0.0.1:\(ports[$0])" }
        for (index, node) in crowd.enumerated() {
            var extra = ["--max-peers", "\(maxPeers)"] + nodeOptions
            for (other, address) in everyone.enumerated() where other != index { extra += ["--peer", address] }
            try node.start(port: ports[index], extra: extra)
        }
    }

    /// Waits (at most 120 s) until the crowd has settled: every node holds every node's self-add to the bench
    /// network (so the sessions are up and rounds done), and the session counts stopped changing. Returns the
    /// seconds it took.
    func settle(_ crowd: [BenchNode]) async throws -> Double {
        let started = ContinuousClock.now
        var stable = 0
        var last: [Int] = []
        while seconds(since: started) < 120 {
            let counts = try await crowd.asyncMap { try await $0.store.counts().authors }
            let sessions = crowd.map { Self.connected($0).count }
            if counts.allSatisfy({ $0 >= nodes }), sessions == last { stable += 1 } else { stable = 0 }
            last = sessions
            if stable >= 3 { break }
            try await Task.sleep(for: .seconds(1))
        }
        return seconds(since: started)
    }

    /// Writes the posts, each with a photo of random bytes, on nodes spread over the crowd, `--interval-ms` apart.
    /// Returns them, and the session counts of every node sampled every tenth post.
    func writePosts(on crowd: [BenchNode]) async throws -> (written: [WrittenPost], sessionSamples: [Int]) {
        var random = SplitMix64(seed: 11)
        var written: [WrittenPost] = []
        var sessionSamples: [Int] = []
        for index in 0..<posts {
            let author = (index * 7 + 3) % nodes
            let node = crowd[author]
            let data = Data(random.bytes(count: photoKB << 10))
            let hash = try await node.store.storePhoto(data)
            let reference = PhotoReference(
                sha256: hash,
                byteCount: UInt64(data.count),
                mediaType: .png,
                width: 1,
                height: 1
            )
            let record = try await node.store.append(
                .post(caption: "crowd \(index)", photo: reference, location: nil),
                by: try await node.logIdentity()
            )
            written.append(WrittenPost(id: record.id, at: Int64(Date().timeIntervalSince1970 * 1000), author: author))
            ControlClient.tell(node.directory, .stored)
            if index % 10 == 0 { sessionSamples += crowd.map { Self.connected($0).count } }
            try await Task.sleep(for: .milliseconds(intervalMS))
        }
        return (written, sessionSamples)
    }

    /// Fills in the traffic figures from each node's counters before and after the posts: copies of each record
    /// received (per post it did not write itself), bytes served and received, and the tree push's prunes, grafts
    /// and announcements over the crowd.
    func addTraffic(to figures: inout Figures, before: [Traffic], after: [Traffic], written: [WrittenPost]) {
        var copies: [Double] = []
        var served: [Double] = []
        var bytesIn: [Double] = []
        for index in 0..<nodes {
            let own = written.filter { $0.author == index }.count
            let received = Double(after[index].recordsIn - before[index].recordsIn)
            copies.append(received / Double(max(1, posts - own)))
            served.append(Double(after[index].bytesOut - before[index].bytesOut))
            bytesIn.append(Double(after[index].bytesIn - before[index].bytesIn))
        }
        figures.copiesMean = copies.reduce(0, +) / Double(nodes)
        figures.copiesMax = copies.max() ?? 0
        figures.servedBusiest = served.max() ?? 0
        figures.servedMean = served.reduce(0, +) / Double(nodes)
        figures.bytesInMean = bytesIn.reduce(0, +) / Double(nodes)
        figures.bytesInMax = bytesIn.max() ?? 0
        figures.prunes = zip(after, before).reduce(0) { $0 + $1.0.prunes - $1.1.prunes }
        figures.grafts = zip(after, before).reduce(0) { $0 + $1.0.grafts - $1.1.grafts }
        figures.announced = zip(after, before).reduce(0) { $0 + $1.0.announced - $1.1.announced }
    }

    /// The time each post took to reach every node, in seconds: the latest `received_at` over the crowd, against
    /// the time it was written; infinity for a post some node does not hold.
    static func spreads(of written: [WrittenPost], over crowd: [BenchNode]) throws -> [Double] {
        var spreads: [Double] = []
        for post in written {
            var latest: Int64 = 0
            var missing = false
            for node in crowd {
                let at = try receivedAt(post.id, in: node.directory)
                if let at { latest = max(latest, at) } else { missing = true }
            }
            spreads.append(missing ? .infinity : Double(latest - post.at) / 1000)
        }
        return spreads
    }

    /// The peers with a session now, by the node's control socket (empty when it does not answer).
    static func connected(_ node: BenchNode) -> [AuthorID] { connected(node.directory) }

    /// The peers with a session now, by the control socket of the node on `directory` (empty when it does not answer).
    static func connected(_ directory: DataDirectory) -> [AuthorID] {
        guard let client = try? ControlClient(directory), (try? client.send(.connected)) != nil,
            case .connected(let peers, _, _)? = try? client.reply()
        else { return [] }
        return peers
    }

    struct Traffic {
        var recordsIn: Int64 = 0
        var bytesIn: Int64 = 0
        var bytesOut: Int64 = 0
        var prunes = 0
        var grafts = 0
        var announced = 0
    }

    /// Everything the node's sessions moved so far: the store's counters of ended sessions and the live ones'.
    static func traffic(_ node: BenchNode) -> Traffic {
        var total = Traffic()
        guard let client = try? ControlClient(node.directory), (try? client.send(.connected)) != nil,
            case .connected(_, _, let live)? = try? client.reply()
        else { return total }
        let queue = try? DatabaseQueue(path: node.directory.databaseURL.path)
        let rows =
            (try? queue?.read { db in
                try Row.fetchAll(db, sql: "SELECT records_in, bytes_in, bytes_out FROM peer")
            }) ?? []
        for row in rows {
            total.recordsIn += row["records_in"] ?? 0
            total.bytesIn += row["bytes_in"] ?? 0
            total.bytesOut += row["bytes_out"] ?? 0
        }
        for traffic in live.values {
            total.recordsIn += traffic.recordsIn
            total.bytesIn += traffic.bytesIn
            total.bytesOut += traffic.bytesOut
            total.prunes += traffic.prunes ?? 0
            total.grafts += traffic.grafts ?? 0
            total.announced += traffic.announced ?? 0
        }
        return total
    }

    /// When `record` was stored on the node (milliseconds since 1970), or nil when it is not there.
    static func receivedAt(_ record: RecordID, in directory: DataDirectory) throws -> Int64? {
        let queue = try DatabaseQueue(path: directory.databaseURL.path)
        return try queue.read { db in
            try Int64.fetchOne(db, sql: "SELECT received_at FROM record WHERE id = ?", arguments: [Data(record.bytes)])
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
