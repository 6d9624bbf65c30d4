import ArgumentParser
import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench vs-syncthing`: the same data moved by two of our nodes and by two Syncthing instances, in the
/// same run. Syncthing is Debian's, driven by `scripts/vs-syncthing.py` inside a private network namespace with
/// loopback only; our nodes run on loopback too. Each side starts with the data on its first instance (already
/// hashed: our posts were made, Syncthing's folder was scanned), and the clock runs from the second instance's
/// start until it holds everything.
struct VsSyncthingBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "vs-syncthing",
        abstract: "Our nodes beside Syncthing on the same data: 2 MiB photos, real JPEGs, small posts, one new photo."
    )

    @Option(help: "Runs of each set on each side; the median is reported.")
    var runs = 3

    @Option(help: "Random photos of 2 MiB (0: skip this set and the new photo).")
    var photos = 200

    @Option(help: "Real JPEGs (about 1 MB each, made by the script with libvips; 0: skip).")
    var jpegs = 200

    @Option(help: "Small posts (a 2 KiB photo each) against files of 2 KiB (0: skip).")
    var small = 5000

    @Option(help: "Where to put the data (default: a temporary directory, removed afterwards).")
    var scratch: String?

    @Option(help: "The script that drives Syncthing.")
    var script = "scripts/vs-syncthing.py"

    @Option(
        help: """
            Both sides across an emulated link between two network namespaces instead of loopback: gbe (1 Gbit/s, \
            0.2 ms round trip) or wifi (200 Mbit/s, 4 ms round trip, 0.1 % loss), shaped by tc netem; a kernel \
            without netem shapes gbe by its rate alone (tbf) and carries wifi through a user-space relay between two \
            TUN devices (scripts/vs-syncthing.py).
            """
    )
    var link: String?

    func validate() throws {
        guard runs >= 1 else { throw ValidationError("--runs must be at least 1") }
        if let link, !["gbe", "wifi"].contains(link) {
            throw ValidationError("--link \(link): choose gbe or wifi")
        }
        guard photos >= 0, jpegs >= 0, small >= 0 else {
            throw ValidationError("--photos, --jpegs and --small must be 0 (skip that set) or more")
        }
        guard photos + jpegs + small > 0 else { throw ValidationError("every set is empty: nothing to measure") }
    }

    @OptionGroup var output: ReportOptions

    func measure() async throws {
        let root = URL(fileURLWithPath: scratch ?? NSTemporaryDirectory())
            .appendingPathComponent("continuum-bench-vs-syncthing-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let logger = Logger(label: "bench")
        say(
            "continuum-bench vs-syncthing: \(runs) runs of each set on each side; medians"
                + (link.map { "; across an emulated link, \($0)" } ?? "; on loopback")
        )
        say("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores, \(ProcessInfo.processInfo.hostName)")
        _ = try python(["install"])
        say("syncthing: \(try shell("/usr/bin/env", ["syncthing", "--version"]).split(separator: "\n").first ?? "")")

        let (sets, newFile) = try makeSets(in: root)
        var rows: [String] = []
        for set in sets {
            let theirs = try syncthing(set.name, set.dir, new: set.name == "random" ? newFile : nil)
            let ours = try await ourSide(
                set.name,
                set.dir,
                jpeg: set.jpeg,
                new: set.name == "random" ? newFile : nil,
                root: root,
                logger: logger
            )
            rows.append(Self.comparison(set.title, ours: ours, theirs: theirs))
            say(rows.last!, Self.figures(set.name, ours: ours, theirs: theirs))
            if let ourNew = ours.new, let theirNew = theirs.new {
                rows.append(
                    "one new 2 MiB photo after the rest: ours \(format(ourNew * 1000, 1)) ms, Syncthing "
                        + "\(format(theirNew * 1000, 1)) ms (a scan of that one file, then the transfer): "
                        + "\(format(theirNew / ourNew, 2))x"
                )
                say(
                    rows.last!,
                    ["new.oursMs": ourNew * 1000, "new.syncthingMs": theirNew * 1000, "new.ratio": theirNew / ourNew]
                )
            }
        }
        say("summary (medians of \(runs)):")
        for row in rows { say("  " + row) }
    }

    /// A set of files both sides move: its name (for the script and our data directories), the title of its line
    /// in the summary, where its files are, and whether they are real JPEGs (posted as `post` does).
    struct DataSet {
        var name: String
        var title: String
        var dir: URL
        var jpeg: Bool
    }

    /// Makes the data under `root`, as files (the same bytes for both sides): the sets that are not skipped (a set
    /// of 0 is, with the new photo when it is the random set), and the new photo's file.
    func makeSets(in root: URL) throws -> (sets: [DataSet], newFile: URL) {
        var random = SplitMix64(seed: 15)
        let randomDir = try makeFiles(root.appendingPathComponent("random"), count: photos, size: 2 << 20, &random)
        let smallDir = try makeFiles(root.appendingPathComponent("small"), count: small, size: 2048, &random)
        let newDir = try makeFiles(root.appendingPathComponent("new"), count: 1, size: 2 << 20, &random)
        let newFile = newDir.appendingPathComponent("new.bin")
        try FileManager.default.moveItem(at: newDir.appendingPathComponent("file-0000.bin"), to: newFile)
        let jpegDir = root.appendingPathComponent("jpegs")
        if jpegs > 0 { _ = try python(["jpegs", "--out", jpegDir.path, "--count", "\(jpegs)"]) }

        let all: [(count: Int, set: DataSet)] = [
            (photos, DataSet(name: "random", title: "\(photos) x 2 MiB random", dir: randomDir, jpeg: false)),
            (jpegs, DataSet(name: "jpegs", title: "\(jpegs) real JPEGs", dir: jpegDir, jpeg: true)),
            (small, DataSet(name: "small", title: "\(small) small posts / 2 KiB files", dir: smallDir, jpeg: false)),
        ]
        return (all.filter { $0.count > 0 }.map(\.set), newFile)
    }

    /// The summary's line for one set: each side's time, throughput, CPU and peak RSS, and the ratio of throughputs.
    static func comparison(_ title: String, ours: Figures, theirs: Figures) -> String {
        let bytes = theirs.bytes
        return "\(title): ours \(format(ours.seconds, 2)) s = \(format(Double(bytes) / ours.seconds / 1e6)) MB/s "
            + "(CPU \(format(ours.senderCPU, 2)) + \(format(ours.receiverCPU, 2)) s, peak RSS "
            + "\(ours.senderRSS / 1024) / \(ours.receiverRSS / 1024) MiB"
            + (ours.thumbnails.map { "; with our thumbnails \(format($0, 2)) s" } ?? "") + "); "
            + "Syncthing \(format(theirs.seconds, 2)) s = \(format(Double(bytes) / theirs.seconds / 1e6)) MB/s "
            + "(CPU \(format(theirs.senderCPU, 2)) + \(format(theirs.receiverCPU, 2)) s, peak RSS "
            + "\(theirs.senderRSS / 1024) / \(theirs.receiverRSS / 1024) MiB); "
            + "ours is \(format(theirs.seconds / ours.seconds, 2))x Syncthing's throughput"
            + (ours.linkShare.map { share in
                "; share of the link's rate: ours \(format(share * 100, 1)) %, Syncthing "
                    + "\(format((theirs.linkShare ?? .nan) * 100, 1)) % from B's start; "
                    + "ours \(format((ours.transferShare ?? .nan) * 100, 1)) %, Syncthing "
                    + "\(format((theirs.transferShare ?? .nan) * 100, 1)) % from the connection"
            } ?? "")
    }

    /// The report's figures of one set: both sides' seconds, CPU and RSS, ours until the thumbnails too, and the
    /// ratio of Syncthing's time to ours.
    static func figures(_ set: String, ours: Figures, theirs: Figures) -> KeyValuePairs<String, Double> {
        [
            "\(set).oursSeconds": ours.seconds, "\(set).syncthingSeconds": theirs.seconds,
            "\(set).ratio": theirs.seconds / ours.seconds,
            "\(set).oursThumbnailsSeconds": ours.thumbnails ?? .nan,
            "\(set).oursReceiverCPUSeconds": ours.receiverCPU, "\(set).syncthingReceiverCPUSeconds": theirs.receiverCPU,
            "\(set).oursSenderCPUSeconds": ours.senderCPU, "\(set).syncthingSenderCPUSeconds": theirs.senderCPU,
            "\(set).oursReceiverRSSMiB": Double(ours.receiverRSS) / 1024,
            "\(set).syncthingReceiverRSSMiB": Double(theirs.receiverRSS) / 1024,
            "\(set).oursLinkShare": ours.linkShare ?? .nan, "\(set).syncthingLinkShare": theirs.linkShare ?? .nan,
            "\(set).oursTransferLinkShare": ours.transferShare ?? .nan,
            "\(set).syncthingTransferLinkShare": theirs.transferShare ?? .nan,
        ]
    }

    /// One side's figures for one set (medians of the runs). CPU in seconds, RSS in KiB.
    struct Figures {
        var seconds: Double
        var bytes: Int
        var senderCPU: Double
        var receiverCPU: Double
        var senderRSS: Int
        var receiverRSS: Int
        var thumbnails: Double? = nil
        var new: Double? = nil
        /// Seconds from B's start until B had a session with A.
        var connect: Double? = nil
        /// With `--link`: the bytes' rate over the link's (bits per second), from B's start.
        var linkShare: Double? = nil
        /// With `--link`: the same from B's session with A on (B's start-up and the connection not counted).
        var transferShare: Double? = nil
    }

    // MARK: Syncthing

    func syncthing(_ name: String, _ dir: URL, new: URL?) throws -> Figures {
        var arguments = ["run", "--name", name, "--source", dir.path, "--runs", "\(runs)"]
        if let new { arguments += ["--new", new.path] }
        if let link { arguments += ["--link", link] }
        let output = try python(arguments)
        guard let line = output.split(separator: "\n").last,
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let seconds = json["seconds"] as? Double, let bytes = json["bytes"] as? Int,
            let sender = json["sender"] as? [String: Any], let receiver = json["receiver"] as? [String: Any]
        else { throw ValidationError("vs-syncthing.py printed no result: \(output)") }
        let runs = (json["runs"] as? [Double]) ?? []
        let newRuns = ((json["new"] as? [String: Any])?["runs"] as? [Double]) ?? []
        say(
            "syncthing \(name): \(format(seconds, 2)) s (runs \(runs.map { format($0, 2) }.joined(separator: ", ")); "
                + "connect \(format((json["connect_seconds"] as? Double) ?? .nan, 2)) s"
                + (newRuns.isEmpty
                    ? "" : "; new photo \(newRuns.map { format($0 * 1000, 1) }.joined(separator: ", ")) ms") + ")"
        )
        return Figures(
            seconds: seconds,
            bytes: bytes,
            senderCPU: (sender["cpu_seconds"] as? Double) ?? .nan,
            receiverCPU: (receiver["cpu_seconds"] as? Double) ?? .nan,
            senderRSS: (sender["peak_rss_kib"] as? Int) ?? 0,
            receiverRSS: (receiver["peak_rss_kib"] as? Int) ?? 0,
            thumbnails: nil,
            new: (json["new"] as? [String: Any])?["seconds"] as? Double,
            connect: json["connect_seconds"] as? Double,
            linkShare: json["link_share"] as? Double,
            transferShare: (json["link_share"] as? Double).flatMap { share in
                (json["transfer_seconds"] as? Double).map { share * seconds / $0 }
            }
        )
    }

    // MARK: Ours

    /// Node A holds the set as posts (made once); node B, new each run, fetches it all.
    func ourSide(_ name: String, _ dir: URL, jpeg: Bool, new: URL?, root: URL, logger: Logger) async throws -> Figures {
        let a = try BenchNode(root.appendingPathComponent("ours-\(name)-a"), logger: logger)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        try await post(files, in: dir, on: a, jpeg: jpeg)
        let count = try await a.store.counts().photos
        try a.store.close()
        let bytes = try files.reduce(0) { total, file in
            total
                + ((try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(file).path)[.size]
                    as? Int) ?? 0)
        }
        var all: [Figures] = []
        for run in 0..<runs {
            let place = try link.map { try linkUp($0, name: "cn-ours-\(getpid())-\(run)") }
            defer { if let place { linkDown(place.name) } }
            var figures = try await ourRun(
                run,
                of: name,
                from: a,
                count: count,
                jpeg: jpeg,
                new: new,
                root: root,
                logger: logger,
                link: place
            )
            figures.linkShare = place.map { Double(bytes) * 8 / figures.seconds / $0.bitsPerSecond }
            figures.transferShare =
                place.map { place in
                    figures.connect.map { Double(bytes) * 8 / (figures.seconds - $0) / place.bitsPerSecond }
                } ?? nil
            all.append(figures)
        }
        return Self.medians(of: all, bytes: bytes)
    }

    /// Posts each of `files` (in `dir`) on node `a`, whose store is open: real JPEGs through the CLI's `post`, as a
    /// person would (metadata checked and cleaned, a thumbnail made), other files straight into the store.
    func post(_ files: [String], in dir: URL, on a: BenchNode, jpeg: Bool) async throws {
        if jpeg {
            // The real path: metadata checked and cleaned, a thumbnail made, as `post` does.
            try a.store.close()
            for file in files {
                _ = try a.cli([
                    "post", dir.appendingPathComponent(file).path, "--caption", file, "--group", BenchNode.network,
                ])
            }
            a.store = try a.openStore()
        } else {
            let identity = try await a.logIdentity()
            for file in files {
                let data = try Data(contentsOf: dir.appendingPathComponent(file))
                let hash = try await a.store.storePhoto(data)
                let photo = PhotoReference(
                    sha256: hash,
                    byteCount: UInt64(data.count),
                    mediaType: .png,
                    width: 1,
                    height: 1
                )
                _ = try await a.store.append(.post(caption: file, photo: photo, location: nil), by: identity)
            }
        }
    }

    /// One run of set `name`: starts `a` and a new node B, times until B holds all `count` photos (and, for JPEGs,
    /// their thumbnails), then, with `new`, how long one more photo posted on `a` takes to reach B. Stops both and
    /// removes B's data directory.
    func ourRun(
        _ run: Int,
        of name: String,
        from a: BenchNode,
        count: Int,
        jpeg: Bool,
        new: URL?,
        root: URL,
        logger: Logger,
        link: Link? = nil
    ) async throws -> Figures {
        try a.start(link: link?.place(of: .a))
        // Stopped on every way out (stop() does nothing the second time): a node left running would keep its
        // namespace's network alive after `ip netns del`, and its port.
        defer { try? a.stop() }
        let aCPU = Self.cpuSeconds(a.pid)
        let b = try BenchNode(root.appendingPathComponent("ours-\(name)-b\(run)"), logger: logger)
        try b.store.close()
        let started = ContinuousClock.now
        try b.start(peer: a.port, link: link?.place(of: .b))
        defer { try? b.stop() }
        // As Syncthing's side polls B's connections: every 20 ms, until B's store has A as a connected peer.
        try await b.waitForConnection(timeout: .seconds(60))
        let connect = seconds(since: started)
        try await b.waitForPhotos(count, timeout: .seconds(900))
        var figures = Figures(
            seconds: seconds(since: started),
            bytes: 0,
            senderCPU: 0,
            receiverCPU: 0,
            senderRSS: 0,
            receiverRSS: 0,
            connect: connect
        )
        if jpeg {
            try await b.waitForThumbnails(count, timeout: .seconds(900))
            figures.thumbnails = seconds(since: started)
        }
        figures.senderCPU = Self.cpuSeconds(a.pid) - aCPU
        figures.receiverCPU = Self.cpuSeconds(b.pid)
        if let new { figures.new = try await newPhoto(new, from: a, to: b, count: count) }
        figures.senderRSS = a.peakRSS()
        figures.receiverRSS = b.peakRSS()
        say(
            "ours      \(name) run \(run + 1): \(format(figures.seconds, 2)) s"
                + (figures.thumbnails.map { ", thumbnails \(format($0, 2)) s" } ?? "")
                + (figures.new.map { ", new photo \(format($0 * 1000, 1)) ms" } ?? "")
        )
        try b.stop()
        try a.stop()
        try? FileManager.default.removeItem(at: b.directory.url)
        return figures
    }

    /// Posts the photo in file `new` on the running node `a` and returns the seconds until `b`, which holds `count`
    /// photos, tells that it holds it too (its `photoArrived`, sent once the photo is checked, durable and recorded),
    /// as Syncthing's side waits for B's `ItemFinished` of the file: an event on both sides, no poll (a poll every
    /// 20 ms made both figures ticks of it). The post is deleted (erased, with its photo) afterwards, so the next run
    /// starts from the same set.
    func newPhoto(_ new: URL, from a: BenchNode, to b: BenchNode, count: Int) async throws -> Double {
        let store = try a.openStore()
        let identity = try await a.logIdentity(store)
        let data = try Data(contentsOf: new)
        // B's events, from before the clock starts.
        let arrival = try await Self.arrival(of: AssetHash.of(data), on: b.directory)
        // A's first `stored` hint since it started, untimed: a process decodes a kind of request slowly the first
        // time (the Swift runtime makes its types' metadata then: about 1.3 ms of A's here), and a node that people
        // post to has long been past it. Nothing is stored yet, so A's gossip pass finds nothing to send.
        ControlClient.tell(a.directory, .stored)
        let appended = ContinuousClock.now
        // As `post` does: the photo copied in and hashed meanwhile (`post` makes its thumbnail then, skipped here), then
        // synced, placed, and recorded with its post in one commit.
        let (file, hash) = try store.writePhoto(data)
        let placed = try store.placePhoto(file, as: hash, bytes: Int64(data.count))
        let photo = PhotoReference(
            sha256: hash,
            byteCount: UInt64(data.count),
            mediaType: .png,
            width: 1,
            height: 1
        )
        let post = try await store.append(
            .post(caption: "new", photo: photo, location: nil),
            by: identity,
            recording: [placed]
        )
        // As `continuum-node post` tells the running node (and as Syncthing's side asks for a scan of the new file):
        // without it, A finds the post at its next look at the store, up to 50 ms later.
        ControlClient.tell(a.directory, .stored)
        try await arrival.wait(timeout: .seconds(60))
        let elapsed = seconds(since: appended)
        // Held, as its store says too (untimed).
        try await b.waitForPhotos(count + 1, timeout: .seconds(60))
        // The next run starts from the same set: the new post goes (erased, with its photo).
        _ = try await store.append(.delete(targets: [post.id]), by: identity)
        try store.close()
        return elapsed
    }

    /// A node's `watch` stream, read on a thread of its own (its reads block) until a `photoArrived` names `hash`;
    /// returns once the stream has begun.
    static func arrival(of hash: AssetHash, on node: DataDirectory) async throws -> PhotoArrival {
        let (events, event) = AsyncStream<Result<Bool, any Error>>.makeStream()
        Thread.detachNewThread {
            do {
                let watch = try ControlClient(node)
                try watch.send(.watch)
                _ = try watch.readLine()
                event.yield(.success(false))
                // The node's summary names the photo by its short hash; the line has the whole one.
                while let line = try watch.readLine() {
                    guard line.contains(#""type":"photoArrived""#), line.contains(hash.hex) else { continue }
                    event.yield(.success(true))
                    break
                }
            } catch {
                event.yield(.failure(error))
            }
            event.finish()
        }
        var iterator = events.makeAsyncIterator()
        guard case .success(false) = await iterator.next() ?? .success(true) else {
            throw ValidationError("B's watch stream did not begin")
        }
        return PhotoArrival(events: events)
    }

    /// The rest of a ``arrival(of:on:)`` stream: the photo's arrival, or the stream's end.
    struct PhotoArrival {
        let events: AsyncStream<Result<Bool, any Error>>

        func wait(timeout: Duration) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events where try event.get() { return }
                    throw ValidationError("B's watch stream ended before the photo arrived")
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    throw ValidationError("the new photo did not arrive within \(timeout)")
                }
                try await group.next()
                group.cancelAll()
            }
        }
    }

    /// The medians of the runs' figures, with the set's size in bytes.
    static func medians(of all: [Figures], bytes: Int) -> Figures {
        func mid<T>(_ key: (Figures) -> T?) -> T? where T: BinaryFloatingPoint {
            let values = all.compactMap(key).map { Double($0) }
            return values.isEmpty ? nil : T(median(values))
        }
        return Figures(
            seconds: mid { $0.seconds } ?? .nan,
            bytes: bytes,
            senderCPU: mid { $0.senderCPU } ?? .nan,
            receiverCPU: mid { $0.receiverCPU } ?? .nan,
            senderRSS: Int(median(all.map { Double($0.senderRSS) })),
            receiverRSS: Int(median(all.map { Double($0.receiverRSS) })),
            thumbnails: mid { $0.thumbnails },
            new: mid { $0.new },
            connect: mid { $0.connect },
            linkShare: mid { $0.linkShare },
            transferShare: mid { $0.transferShare }
        )
    }

    /// CPU seconds (user and system) a process has used, from /proc (0 when it is gone).
    static func cpuSeconds(_ pid: Int32) -> Double {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        // Fields after the command name: state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// An emulated link between two network namespaces (`vs-syncthing.py link-up`).
    struct Link {
        enum Side { case a, b }
        var name: String
        var namespaces: (a: String, b: String)
        var addresses: (a: String, b: String)
        var bitsPerSecond: Double

        func place(of side: Side) -> BenchNode.LinkPlace {
            switch side {
            case .a: BenchNode.LinkPlace(namespace: namespaces.a, address: addresses.a, peerAddress: addresses.b)
            case .b: BenchNode.LinkPlace(namespace: namespaces.b, address: addresses.b, peerAddress: addresses.a)
            }
        }
    }

    /// Makes the link `kind` (gbe or wifi) between namespaces NAME-a and NAME-b, as Syncthing's runs get it.
    func linkUp(_ kind: String, name: String) throws -> Link {
        // The script removes what it made when it fails; an answer not understood here is removed here.
        let output = try python(["link-up", "--link", kind, "--name", name])
        guard let line = output.split(separator: "\n").last,
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
            let a = json["a"] as? [String: String], let b = json["b"] as? [String: String],
            let aNamespace = a["ns"], let aAddress = a["ip"], let bNamespace = b["ns"], let bAddress = b["ip"],
            let bits = json["bits_per_s"] as? Double
        else {
            linkDown(name)
            throw ValidationError("vs-syncthing.py link-up printed no link: \(output)")
        }
        say("link      \(kind) between \(aNamespace) and \(bNamespace), shaped by \(json["shaping"] ?? "?")")
        return Link(
            name: name,
            namespaces: (aNamespace, bNamespace),
            addresses: (aAddress, bAddress),
            bitsPerSecond: bits
        )
    }

    func linkDown(_ name: String) {
        do {
            _ = try python(["link-down", "--name", name])
        } catch {
            // The figures already taken stand; the script says which namespace it could not remove.
            say("link      could not remove the namespaces of \(name): \(error)")
        }
    }

    /// `count` files of `size` random bytes in `dir`, named file-NNNN.bin.
    func makeFiles(_ dir: URL, count: Int, size: Int, _ random: inout SplitMix64) throws -> URL {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for index in 0..<count {
            try Data(random.bytes(count: size)).write(
                to: dir.appendingPathComponent(String(format: "file-%04d.bin", index))
            )
        }
        return dir
    }

    /// Runs the Syncthing script with python3; its stdout (its progress goes to our stderr).
    func python(_ arguments: [String]) throws -> String {
        try shell("/usr/bin/env", ["python3", script] + arguments)
    }

    func shell(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.standardError
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("\(([executable] + arguments).joined(separator: " ")) failed")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
