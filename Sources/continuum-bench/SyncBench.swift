import ArgumentParser
import ContinuumCore
import ContinuumStore
import ContinuumSync
import ContinuumTestSupport
import ContinuumWire
import Foundation
import Logging
import NIOPosix

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench sync`: two real `continuum-node run` processes on loopback.
struct SyncBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Initial sync, delta sync, photo transfer and peak memory of two nodes on loopback."
    )

    @Option(help: "Records for the initial sync.")
    var records = 100_000

    @Option(help: "Authors of those records.")
    var authors = 50

    @Option(help: "Photos to transfer.")
    var photos = 200

    @Option(help: "Size of each photo, in MiB.")
    var photoMB = 2

    @Option(help: "Where to put the data directories (default: a temporary directory, removed afterwards).")
    var scratch: String?

    @OptionGroup var output: ReportOptions

    func validate() throws {
        for (name, value) in [("--records", records), ("--authors", authors), ("--photos", photos)] where value < 1 {
            throw ValidationError("\(name) must be at least 1: (a) to (d) need records, their authors and photos")
        }
        // The receiving node runs with its default --max-photo-mb, 50: a larger photo would be skipped, not fetched.
        guard (1...50).contains(photoMB) else {
            throw ValidationError("--photo-mb must be 1 to 50 (the node's default limit)")
        }
    }

    func measure() async throws {
        let root = URL(fileURLWithPath: scratch ?? NSTemporaryDirectory())
            .appendingPathComponent("continuum-bench-sync-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let logger = Logger(label: "bench")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)

        say("continuum-bench sync: \(records) records from \(authors) authors; \(photos) photos of \(photoMB) MiB")

        let baselines = try await Self.measureBaselines(group: group)
        let rssDuringRecords = try await syncRecords(
            root: root,
            logger: logger,
            verify2: baselines.verify2,
            handshake: baselines.handshake
        )
        try await transferPhotos(
            root: root,
            logger: logger,
            tlsRate: baselines.tlsRate,
            rssDuringRecords: rssDuringRecords
        )
        try await group.shutdownGracefully()
    }

    /// Measures and prints the baselines: Ed25519 verification, a TLS connection's bytes, raw TLS throughput.
    static func measureBaselines(
        group: MultiThreadedEventLoopGroup
    ) async throws -> (verify2: Double, tlsRate: Double, handshake: Double) {
        let verify2 = median([
            await ed25519VerifyRate(threads: 2), await ed25519VerifyRate(threads: 2),
            await ed25519VerifyRate(threads: 2),
        ])
        var tls: [Double] = []
        for _ in 0..<3 { tls.append(try await LoopbackBaseline.tlsThroughput(bytes: 256 << 20, group: group)) }
        let tlsRate = median(tls)
        var handshakes: [Double] = []
        for _ in 0..<3 { handshakes.append(try await tlsConnectionBytes(group: group)) }
        let handshake = median(handshakes)
        say("baseline  Ed25519 verify, 2 threads: \(format(verify2)) /s", ["baseline.verify2PerSecond": verify2])
        say(
            "baseline  one TLS 1.3 connection on loopback (node's settings: mutual Ed25519 certificates, "
                + "X25519MLKEM768 key exchange), handshake and 1 byte each way: \(format(handshake)) bytes",
            ["baseline.tlsConnectionBytes": handshake]
        )
        say(
            "baseline  raw TLS 1.3 loopback (same certificates and library), 256 MiB: \(format(tlsRate)) MB/s (median of 3)",
            ["baseline.tlsMBPerSecond": tlsRate]
        )
        return (verify2, tlsRate, handshake)
    }

    /// The bytes, both ways, of one TLS connection with the node's settings that sends 1 byte each way.
    static func tlsConnectionBytes(group: MultiThreadedEventLoopGroup) async throws -> Double {
        var relay: CountingProxy?
        try await LoopbackBaseline.tlsHandshake(group: group) { port in
            relay = try CountingProxy(to: port)
            return relay!.port
        }
        try await Task.sleep(for: .milliseconds(200))
        let bytes = Double(relay!.counts.withLock { $0.up + $0.down })
        relay?.close()
        return bytes
    }

    /// (a) and (b): the initial sync of the record corpus from A to B, then a delta sync. Returns the peak RSS of B
    /// and of A, in KiB, after the initial sync.
    func syncRecords(
        root: URL,
        logger: Logger,
        verify2: Double,
        handshake: Double
    ) async throws -> (receiver: Int, sender: Int) {
        // (a) Initial sync of the record corpus.
        let a = try BenchNode(root.appendingPathComponent("a"), logger: logger)
        var factory = RecordFactory(authorCount: authors, seed: 7, network: BenchNode.networkGroup)
        let corpus = factory.history(count: records)
        for start in stride(from: 0, to: corpus.count, by: 1000) {
            _ = try await a.store.ingest(Array(corpus[start..<min(start + 1000, corpus.count)]))
        }
        let target = try await a.store.clock()
        try a.store.close()
        try a.start(extra: ["--max-photo-mb", "0"])
        let proxy = try CountingProxy(to: a.port)
        let b = try BenchNode(root.appendingPathComponent("b"), logger: logger)
        try b.store.close()
        let started = ContinuousClock.now
        try b.start(peer: proxy.port, extra: ["--max-photo-mb", "0"])
        try await b.waitForClock(target, timeout: .seconds(600))
        let initial = seconds(since: started)
        let rate = Double(records) / initial
        let rss = (receiver: b.peakRSS(), sender: a.peakRSS())
        say(
            "(a)       initial sync: \(records) records in \(format(initial, 2)) s = \(format(rate)) records/s; "
                + "\(format(rate / verify2, 2))x the 2-thread verify rate (target >= 0.6x); "
                + "wire \(proxy.counts.withLock { $0.up + $0.down } / 1024) KiB",
            ["a.recordsPerSecond": rate, "a.toVerify2": rate / verify2, "a.seconds": initial]
        )
        try await syncDelta(from: a, to: b, through: proxy, target: target, handshake: handshake)
        try b.stop()
        try a.stop()
        return rss
    }

    /// (b) Delta: B, which holds `target`, comes back after one new record on A. Compared with an idle reconnect.
    func syncDelta(
        from a: BenchNode,
        to b: BenchNode,
        through proxy: CountingProxy,
        target: VectorClock,
        handshake: Double
    ) async throws {
        try b.stop()
        proxy.reset()
        try b.start(peer: proxy.port, extra: ["--max-photo-mb", "0"])
        try await b.waitForClock(target, timeout: .seconds(60))
        try await Task.sleep(for: .milliseconds(500))
        let idle = proxy.counts.withLock { $0 }
        try b.stop()
        _ = try a.cli(["comment", try a.anyPostID(), "one more"])
        let newTarget = try await a.openStore().clock()
        proxy.reset()
        let deltaStart = ContinuousClock.now
        try b.start(peer: proxy.port, extra: ["--max-photo-mb", "0"])
        try await b.waitForClock(newTarget, timeout: .seconds(60))
        let deltaTime = seconds(since: deltaStart)
        try await Task.sleep(for: .milliseconds(500))
        let delta = proxy.counts.withLock { $0 }
        let deltaBytes = delta.up + delta.down
        say(
            "(b)       delta sync of 1 record on reconnect, both holding \(records): \(deltaBytes) bytes on the wire "
                + "(B→A \(delta.up), A→B \(delta.down)) in \(format(deltaTime * 1000, 0)) ms from B's start = "
                + "TLS connection baseline \(format(handshake)) + \(deltaBytes - Int(handshake)) bytes of sync; "
                + "the idle reconnect before it (B's first clock delta after the initial sync) cost "
                + "\(idle.up + idle.down) bytes",
            [
                "b.bytes": Double(deltaBytes), "b.overTLSConnectionBytes": Double(deltaBytes) - handshake,
                "b.idleReconnectBytes": Double(idle.up + idle.down),
            ]
        )
    }

    /// (c) and (d): PHOTOS x MiB from C to D, beside durable disk writes, and D's peak RSS.
    func transferPhotos(
        root: URL,
        logger: Logger,
        tlsRate: Double,
        rssDuringRecords rssA: (receiver: Int, sender: Int)
    ) async throws {
        let c = try BenchNode(root.appendingPathComponent("c"), logger: logger)
        let totalBytes = try await storeRandomPhotos(in: c)
        try c.store.close()
        // Baseline: the same bytes stored durably on this disk the way a receiver stores them (hash, write, fsync,
        // rename), as many at a time as the photo fetcher runs transfers.
        let diskRate = try await Self.durableWriteRate(
            c.directory,
            into: root.appendingPathComponent("disk-baseline"),
            parallel: SyncConfiguration().parallelPhotoTransfers
        )
        say(
            "baseline  durable photo writes on this disk (SHA-256, write, fsync, rename; "
                + "\(SyncConfiguration().parallelPhotoTransfers) at a time): \(format(diskRate)) MB/s",
            ["baseline.durablePhotoWritesMBPerSecond": diskRate]
        )
        try c.start()
        let d = try BenchNode(root.appendingPathComponent("d"), logger: logger)
        try d.store.close()
        let photoStart = ContinuousClock.now
        try d.start(peer: c.port)
        try await d.waitForPhotos(photos, timeout: .seconds(600))
        let photoTime = seconds(since: photoStart)
        let photoRate = Double(totalBytes) / photoTime / 1e6
        let rssPhotos = d.peakRSS()
        say(
            "(c)       photos: \(photos) x \(photoMB) MiB in \(format(photoTime, 2)) s = \(format(photoRate)) MB/s; "
                + "\(format(photoRate / tlsRate, 2))x raw TLS loopback (target >= 0.6x); "
                + "\(format(photoRate / diskRate, 2))x durable disk writes",
            ["c.MBPerSecond": photoRate, "c.toTLS": photoRate / tlsRate, "c.seconds": photoTime]
        )
        say(
            "(d)       peak RSS of the receiving node: \(rssA.receiver / 1024) MiB during the record sync, "
                + "\(rssPhotos / 1024) MiB during the photo transfer (target <= 100 MiB); of the sending node: "
                + "\(rssA.sender / 1024) and \(c.peakRSS() / 1024) MiB",
            [
                "d.receiverRecordsMiB": Double(rssA.receiver) / 1024, "d.receiverPhotosMiB": Double(rssPhotos) / 1024,
                "d.senderRecordsMiB": Double(rssA.sender) / 1024, "d.senderPhotosMiB": Double(c.peakRSS()) / 1024,
            ]
        )
        try d.stop()
        try c.stop()
    }

    /// Stores PHOTOS photos of random bytes, PHOTO_MB MiB each, on `node` with a post for each; returns their bytes.
    func storeRandomPhotos(in node: BenchNode) async throws -> Int {
        let identity = try await node.logIdentity()
        var random = SplitMix64(seed: 3)
        var totalBytes = 0
        for index in 0..<photos {
            let data = Data(random.bytes(count: photoMB << 20))
            let hash = try await node.store.storePhoto(data)
            totalBytes += data.count
            _ = try await node.store.append(
                .post(
                    caption: "photo \(index)",
                    photo: PhotoReference(
                        sha256: hash,
                        byteCount: UInt64(data.count),
                        mediaType: .png,
                        width: 1,
                        height: 1
                    ),
                    location: nil
                ),
                by: identity
            )
        }
        return totalBytes
    }

    /// MB/s of storing every photo of `source` again under `target` through an AssetStore, `parallel` at a time.
    static func durableWriteRate(_ source: DataDirectory, into target: URL, parallel: Int) async throws -> Double {
        // Photos only: not thumbnails (photos/thumbs/) nor partial files.
        let files = try FileManager.default.subpathsOfDirectory(atPath: source.photosURL.path)
            .filter { !$0.hasPrefix("thumbs/") && !$0.hasPrefix("tmp/") }
            .map { source.photosURL.appendingPathComponent($0) }
            .filter { (try? $0.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true }
        let assets = AssetStore(root: target)
        defer { try? FileManager.default.removeItem(at: target) }
        let contents = try files.map { try Data(contentsOf: $0) }
        let start = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = contents.makeIterator()
            for _ in 0..<parallel {
                guard let data = next.next() else { break }
                group.addTask { try assets.store(data) }
            }
            while try await group.next() != nil {
                if let data = next.next() { group.addTask { try assets.store(data) } }
            }
        }
        return Double(contents.reduce(0) { $0 + $1.count }) / seconds(since: start) / 1e6
    }
}

/// A data directory and, when started, a `continuum-node run` process on it.
final class BenchNode {
    let directory: DataDirectory
    var store: ContinuumStore
    private var process: Process?
    private(set) var port = 0
    /// The HTTP API's port, when started with `--api-listen`.
    private(set) var apiPort = 0
    private let logger: Logger

    static var binary: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "continuum-node"
        )
    }

    /// The network group every bench node is in (PROTOCOL.md §2.7), so that they share what they hold.
    static let network = "continuum-bench"
    static var networkGroup: GroupID { GroupID(unchecked: Data(NetworkID.named(network).bytes)) }

    /// A new data directory: its identity, and its self-add to the bench network (by `init --network`).
    init(_ url: URL, logger: Logger) throws {
        directory = DataDirectory(url: url)
        self.logger = logger
        let initialize = Process()
        initialize.executableURL = Self.binary
        initialize.arguments = ["init", "--data", url.path, "--network", Self.network]
        initialize.standardOutput = FileHandle.nullDevice
        try initialize.run()
        initialize.waitUntilExit()
        guard initialize.terminationStatus == 0 else {
            throw ValidationError("'continuum-node init' failed on \(url.path)")
        }
        store = try ContinuumStore.open(directory, logger: logger)
    }

    func openStore() throws -> ContinuumStore { try ContinuumStore.open(directory, logger: logger) }

    /// The identity this node signs with: its log key in the bench network (read through `other`, if given).
    func logIdentity(_ other: ContinuumStore? = nil) async throws -> NodeIdentity {
        let identity = try IdentityFile.loadOrCreate(at: directory.identityURL).0
        return try await (other ?? store).logIdentity(in: Self.networkGroup, of: identity)
    }

    /// Where a node runs across an emulated link (`vs-syncthing --link`): its network namespace, its address there,
    /// and the address of the peer it dials.
    struct LinkPlace {
        var namespace: String
        var address: String
        var peerAddress: String
    }

    func start(peer: Int? = nil, port: Int = 0, extra: [String] = [], link: LinkPlace? = nil) throws {
        let output = directory.url.appendingPathComponent("bench.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let process = Process()
        let (listen, peerAddress) = (link?.address ?? "127.0.0.1", link?.peerAddress ?? "127.0.0.1")
        let arguments =
            [
                "run", "--data", directory.path, "--listen", listen, "--port", "\(port)", "--no-remembered-peers",
                "--anti-entropy-interval", "0", "--log-level", "error",
            ] + (extra.contains("--api-listen") ? [] : ["--no-api"])
            + (peer.map { ["--peer", "\(peerAddress):\($0)"] } ?? []) + extra
        if let link {
            // `ip netns exec` execs the node: the process started is the node itself, as its CPU figures need.
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["ip", "netns", "exec", link.namespace, Self.binary.path] + arguments
        } else {
            process.executableURL = Self.binary
            process.arguments = arguments
        }
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.standardError
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n")
            if let line = lines.first(where: { $0.hasPrefix("listening on ") }),
                let port = Int(line.split(separator: ":").last ?? "")
            {
                if extra.contains("--api-listen") {
                    guard let api = lines.first(where: { $0.hasPrefix("api on ") }),
                        let apiPort = Int(api.split(separator: ":").last?.split(separator: "/").first ?? "")
                    else {
                        Thread.sleep(forTimeInterval: 0.02)
                        continue
                    }
                    self.apiPort = apiPort
                }
                self.port = port
                return
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ValidationError("the node at \(directory.path) did not start")
    }

    /// The process id of the running node (0 when stopped).
    var pid: Int32 { process?.processIdentifier ?? 0 }

    func stop() throws {
        guard let process else { return }
        kill(process.processIdentifier, SIGINT)
        process.waitUntilExit()
        self.process = nil
    }

    func cli(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments + ["--data", directory.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func anyPostID() throws -> String {
        try cli(["feed", "--limit", "1", "--json"]).split(separator: "\"id\" : \"").dropFirst().first.map {
            String($0.prefix(64))
        } ?? ""
    }

    /// Reads this node's store (opened beside the running node) every 20 ms until `done` says yes; fails with
    /// `failure` after `timeout`.
    private func poll(
        _ timeout: Duration,
        failure: String,
        until done: (ContinuumStore) async throws -> Bool
    ) async throws {
        let store = try openStore()
        // Only read from: closing it can lose nothing, and a failure to close is no failure of the measurement.
        defer { try? store.close() }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await done(store) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw ValidationError("\(failure) within \(timeout)")
    }

    func waitForClock(_ target: VectorClock, timeout: Duration) async throws {
        try await poll(timeout, failure: "sync did not finish") { store in
            // Covers the target: this node's own log (its self-add to the bench network) is in its clock too.
            let clock = try await store.clock()
            return target.heads.allSatisfy { clock[$0.key] >= $0.value }
        }
    }

    func waitForPhotos(_ count: Int, timeout: Duration) async throws {
        try await poll(timeout, failure: "the photos did not arrive") { try await $0.counts().photos >= count }
    }

    /// Waits until this node has a session with a peer (its store remembers one as connected), looking every 20 ms.
    func waitForConnection(timeout: Duration) async throws {
        try await poll(timeout, failure: "no peer connected") { store in
            try await store.peers().contains { $0.state == "connected" }
        }
    }

    /// Waits until this node has made its own thumbnail of `count` photos (`photos/thumbs/ab/<hash>.jpg`).
    func waitForThumbnails(_ count: Int, timeout: Duration) async throws {
        let thumbs = directory.url.appendingPathComponent("photos/thumbs")
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let shards = (try? FileManager.default.contentsOfDirectory(atPath: thumbs.path)) ?? []
            let made = shards.reduce(0) { total, shard in
                let names =
                    (try? FileManager.default.contentsOfDirectory(atPath: thumbs.appendingPathComponent(shard).path))
                    ?? []
                return total + names.filter { $0.hasSuffix(".jpg") && !$0.hasSuffix(".peer.jpg") }.count
            }
            if made >= count { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ValidationError("the thumbnails were not made within \(timeout)")
    }

    /// Peak resident set of the running process (VmHWM), in KiB.
    func peakRSS() -> Int {
        guard let process,
            let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return 0 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? 0
    }
}
