import ArgumentParser
import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

/// `continuum-bench store`: ingest rate, search latency and cold start of the feed, on 100,000 records.
struct StoreBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Verify-and-store rate, caption search latency, and feed cold start on a large store."
    )

    @Option(help: "Records to ingest.")
    var records = 100_000

    @Option(help: "Authors the records come from.")
    var authors = 50

    @Option(help: "Ingest runs (each into a fresh store); the median is reported.")
    var runs = 3

    @Option(help: "Records per transaction.")
    var batch = 1000

    @Option(help: "Where to put the stores (default: a temporary directory, removed afterwards).")
    var scratch: String?

    @Flag(help: "Measure only the parts (verify alone, store alone), as many times as --runs.")
    var partsOnly = false

    @OptionGroup var output: ReportOptions

    func measure() async throws {
        let root = URL(fileURLWithPath: scratch ?? NSTemporaryDirectory())
            .appendingPathComponent("continuum-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let logger = Logger(label: "bench")
        say("continuum-bench store: \(records) records from \(authors) authors, batches of \(batch)")
        say("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.hostName)")

        // Baselines, measured now, on this machine.
        let verify1 = median([await ed25519VerifyRate(threads: 1), await ed25519VerifyRate(threads: 1)])
        let verify2 = median([
            await ed25519VerifyRate(threads: 2), await ed25519VerifyRate(threads: 2),
            await ed25519VerifyRate(threads: 2),
        ])
        say("baseline  Ed25519 verify, 1 thread:   \(format(verify1)) /s", ["baseline.verify1PerSecond": verify1])
        say("baseline  Ed25519 verify, 2 threads:  \(format(verify2)) /s", ["baseline.verify2PerSecond": verify2])

        // The corpus: a realistic mix of profiles, posts, comments, edits and deletes.
        var factory = RecordFactory(authorCount: authors, seed: 2026)
        let corpus = factory.history(count: records).map(\.bytes)
        let bytes = corpus.reduce(0) { $0 + $1.count }
        say("corpus    \(corpus.count) records, \(bytes / 1024) KiB")

        if partsOnly {
            for _ in 0..<runs { try await measureParts(corpus, root: root, logger: logger) }
            return
        }
        let lastStore = try await measureIngest(corpus, root: root, logger: logger, verify1: verify1, verify2: verify2)
        try await measureParts(corpus, root: root, logger: logger)
        guard let directory = lastStore else { return }
        let storedRecords = try await measureSearch(directory, factory: &factory, logger: logger)
        try Self.measureColdStart(directory, records: storedRecords)
    }

    /// (1) Verify and store: parse + verify on both cores, overlapped with one transaction per batch. Returns the
    /// store of the last run, kept for the measurements that follow (nil when there are no runs).
    func measureIngest(
        _ corpus: [[UInt8]],
        root: URL,
        logger: Logger,
        verify1: Double,
        verify2: Double
    ) async throws -> DataDirectory? {
        var rates: [Double] = []
        var lastStore: DataDirectory?
        for run in 0..<runs {
            let directory = DataDirectory(url: root.appendingPathComponent("ingest-\(run)"))
            let store = try ContinuumStore.open(directory, logger: logger)
            let elapsed = try await seconds { try await Self.ingest(corpus, into: store, batch: batch) }
            let counts = try await store.counts()
            precondition(counts.records == corpus.count, "stored \(counts.records) of \(corpus.count)")
            rates.append(Double(corpus.count) / elapsed)
            await store.finishPendingErasures()
            await store.finishPendingErasures()
            try store.close()
            if run == runs - 1 { lastStore = directory } else { try? FileManager.default.removeItem(at: directory.url) }
        }
        let ingestRate = median(rates)
        say(
            "ingest    verified and stored: \(format(ingestRate)) records/s (median of \(runs): "
                + "\(rates.map { format($0) }.joined(separator: ", "))); "
                + "\(format(ingestRate / verify2, 2))x the 2-thread verify rate, "
                + "\(format(ingestRate / verify1, 2))x the 1-thread rate",
            ["ingest.recordsPerSecond": ingestRate, "ingest.toVerify2": ingestRate / verify2]
        )
        return lastStore
    }

    /// Where the time goes: verification alone, and storing alone (records verified beforehand).
    func measureParts(_ corpus: [[UInt8]], root: URL, logger: Logger) async throws {
        let verifyOnly = try await seconds {
            for start in stride(from: 0, to: corpus.count, by: batch) {
                let slice = Array(corpus[start..<min(start + batch, corpus.count)])
                _ = try await BatchVerifier.verify(slice, concurrency: 2).map { try $0.get() }
            }
        }
        let verified = try await BatchVerifier.verify(corpus, concurrency: 2).map { try $0.get() }
        let storeOnlyDirectory = DataDirectory(url: root.appendingPathComponent("store-only"))
        let storeOnly = try ContinuumStore.open(storeOnlyDirectory, logger: logger)
        let cpuBefore = processCPUSeconds()
        let storeSeconds = try await seconds {
            for start in stride(from: 0, to: verified.count, by: batch) {
                _ = try await storeOnly.ingest(Array(verified[start..<min(start + batch, verified.count)]))
            }
        }
        let storeCPU = processCPUSeconds() - cpuBefore
        await storeOnly.finishPendingErasures()
        try storeOnly.close()
        try? FileManager.default.removeItem(at: storeOnlyDirectory.url)
        let storeRate = Double(corpus.count) / storeSeconds
        say(
            "          parts: parse+verify alone (2 threads) \(format(Double(corpus.count) / verifyOnly)) records/s; "
                + "store alone (1 thread, 1 transaction per batch) \(format(storeRate)) records/s, "
                + "\(format(storeCPU * 1e6 / Double(corpus.count), 1)) µs of CPU per record",
            [
                "parts.verifyRecordsPerSecond": Double(corpus.count) / verifyOnly,
                "parts.storeRecordsPerSecond": storeRate,
                "parts.storeCPUMicrosecondsPerRecord": storeCPU * 1e6 / Double(corpus.count),
            ]
        )
        try measureFloor(verified, storeRate: storeRate, root: root)
    }

    /// The record log's floor on this disk (``RecordLogFloor``), the same records in the same batches, beside the
    /// store alone.
    func measureFloor(_ verified: [VerifiedRecord], storeRate: Double, root: URL) throws {
        let rows = verified.map {
            (
                id: $0.id.bytes, author: $0.header.author.bytes, sequence: Int64($0.header.sequence),
                bytes: Data($0.bytes)
            )
        }
        let floor = try RecordLogFloor.measure(rows, batch: batch, in: root, cpuSeconds: processCPUSeconds)
        say(
            "baseline  SQLite on this disk, the records as rows of a bare log (unique random id, unique author and "
                + "sequence; durable transactions of \(batch)): \(format(floor.perSecond)) rows/s, "
                + "\(format(floor.cpuMicroseconds, 1)) µs of CPU per row; the store alone is "
                + "\(format(storeRate / floor.perSecond, 2))x that rate",
            [
                "baseline.recordLogRowsPerSecond": floor.perSecond,
                "baseline.recordLogCPUMicrosecondsPerRow": floor.cpuMicroseconds,
                "parts.storeToRecordLog": storeRate / floor.perSecond,
            ]
        )
    }

    /// (2) Search latency on RECORDS posts: tops the store up with posts from `factory`, then times each term.
    /// Returns the records the store then holds.
    func measureSearch(_ directory: DataDirectory, factory: inout RecordFactory, logger: Logger) async throws -> Int {
        let store = try ContinuumStore.open(directory, logger: logger)
        var posts = try await store.counts().posts
        while posts < records {
            let more = (0..<min(batch, records - posts)).map { index in factory.post(by: index % authors) }
            _ = try await store.ingest(more)
            posts = try await store.counts().posts
        }
        let terms = ["water", "CAFE", "zurich", "crème brûlée", "lake", "Ålesund", "señor", "harb", "xyzzy", "ri"]
        var latencies: [Double] = []
        var perTerm: [String] = []
        for term in terms {
            var samples: [Double] = []
            var hits = 0
            for _ in 0..<21 {
                samples.append(try await seconds { hits = try await store.search(term, limit: 50).count } * 1000)
            }
            latencies += samples
            perTerm.append("\(term)=\(format(median(samples), 2))ms/\(hits)")
        }
        say(
            "search    \(posts) posts: median \(format(median(latencies), 2)) ms, p95 \(format(percentile(latencies, 95), 2)) ms "
                + "(target: median <= 10 ms; limit 50; \(terms.count) terms x 21)",
            ["search.medianMs": median(latencies), "search.p95Ms": percentile(latencies, 95)]
        )
        say("          per term (median ms / hits): \(perTerm.joined(separator: " "))")
        try await Self.measureLook(store, posts: posts)
        let counts = try await store.counts()
        await store.finishPendingErasures()
        try store.close()
        return counts.records
    }

    /// The photo fetcher's look on this store (its posts' photos are not here): reading the missing photos, and
    /// the same look when the store has not changed since (the version alone), medians of 21.
    static func measureLook(_ store: ContinuumStore, posts: Int) async throws {
        var read: [Double] = []
        var unchanged: [Double] = []
        for _ in 0..<21 {
            var look = (version: Int64(0), photos: [MissingPhoto]?.none)
            read.append(try await seconds { look = try await store.missingPhotos(limit: 1000, changedSince: nil) })
            let version = look.version
            unchanged.append(
                try await seconds { look = try await store.missingPhotos(limit: 1000, changedSince: version) }
            )
            guard look.photos == nil else { throw ValidationError("the store changed between two looks") }
        }
        say(
            "look      the photo fetcher's look at \(posts) posts whose photos are missing, the store unchanged since "
                + "the last: \(format(median(unchanged) * 1e3, 3)) ms (baseline: reading the list, "
                + "\(format(median(read) * 1e3, 1)) ms; medians of 21)",
            ["look.unchangedMs": median(unchanged) * 1e3, "look.readMs": median(read) * 1e3]
        )
    }

    /// (3) Cold start of `feed --limit 20`: a new process on the store of `records` records, beside `--help`.
    static func measureColdStart(_ directory: DataDirectory, records: Int) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("continuum-node")
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            say("feed      skipped: \(binary.path) not built (swift build -c release)")
            return
        }
        let help = median(try (0..<7).map { _ in try launch(binary, ["--help"]) })
        let feed = median(
            try (0..<7).map { _ in try launch(binary, ["feed", "--limit", "20", "--data", directory.path]) }
        )
        say(
            "feed      cold start of 'feed --limit 20' on \(records) records: \(format(feed, 1)) ms median of 7 "
                + "(baseline: process start with --help \(format(help, 1)) ms)",
            ["feed.coldMs": feed, "baseline.processStartMs": help]
        )
    }

    /// CPU seconds (user and system) this process has used so far.
    func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Milliseconds from starting `binary` with `arguments` to its exit, which must be a success.
    static func launch(_ binary: URL, _ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let start = ContinuousClock.now
        try process.run()
        process.waitUntilExit()
        let elapsed = ContinuousClock.now - start
        precondition(process.terminationStatus == 0, "\(arguments) failed")
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18) * 1000
    }

    /// Verifies batch k+1 on both cores while batch k is being written.
    static func ingest(_ corpus: [[UInt8]], into store: ContinuumStore, batch: Int) async throws {
        var pending: Task<IngestReport, any Error>?
        for start in stride(from: 0, to: corpus.count, by: batch) {
            let slice = Array(corpus[start..<min(start + batch, corpus.count)])
            let verified = try await BatchVerifier.verify(slice, concurrency: 2).map { try $0.get() }
            if let pending { _ = try await pending.value }
            pending = Task { try await store.ingest(verified) }
        }
        if let pending { _ = try await pending.value }
    }
}
