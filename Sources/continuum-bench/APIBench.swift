import ArgumentParser
import ContinuumCore
import ContinuumStore
import ContinuumTestSupport
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// `continuum-bench api`: the HTTP API of a real `continuum-node run` over loopback: the latency of a feed page
/// and of the smallest route on a kept-alive connection, and the speed of a large upload (streamed to disk,
/// hashed, synced), each beside a raw loopback baseline measured in the same run.
struct APIBench: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "api",
        abstract: "HTTP API: feed latency on 1,000 posts, upload speed; beside raw loopback TCP."
    )

    @Option(help: "Posts in the node's store.")
    var posts = 1000

    @Option(help: "Requests per latency figure.")
    var requests = 300

    @Option(help: "Size of the upload, in MiB.")
    var uploadMB = 256

    @Option(help: "Runs of the upload.")
    var runs = 5

    @OptionGroup var output: ReportOptions

    func measure() async throws {
        let logger = Logger(label: "bench")
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-bench-api-\(UUID())")
        defer { try? FileManager.default.removeItem(at: root) }
        say("continuum-bench api: \(posts) posts, \(requests) requests per figure, \(runs) uploads of \(uploadMB) MiB")

        let rtt = try PushBench.loopbackRoundTrip(count: 2000)
        say(
            "baseline  raw TCP loopback round trip, 1 byte each way: \(format(rtt * 1e6, 1)) µs (median of 2000)",
            ["baseline.loopbackRoundTripMicroseconds": rtt * 1e6]
        )
        let raw = try Self.loopbackThroughput(bytes: uploadMB * 1_048_576)
        say(
            "baseline  raw TCP loopback throughput, one connection: \(format(raw / 1e6)) MB/s",
            ["baseline.loopbackMBPerSecond": raw / 1e6]
        )

        let node = try BenchNode(root.appendingPathComponent("a"), logger: logger)
        var factory = RecordFactory(authorCount: 20, seed: 7, network: BenchNode.networkGroup)
        try await StoreBench.ingest(factory.history(count: posts * 37 / 10).map(\.bytes), into: node.store, batch: 1000)
        let held = try await node.store.counts()
        say("store: \(held.posts) posts, \(held.comments) comments from \(held.authors) authors")
        try node.store.close()
        try node.start(extra: ["--api-listen", "127.0.0.1:0", "--max-upload-mb", "\(uploadMB + 1)"])
        defer { try? node.stop() }
        let client = try KeepAliveClient(port: node.apiPort)

        for (name, path) in [("GET /api/status", "/api/status"), ("GET /api/feed?limit=60", "/api/feed?limit=60")] {
            var times: [Double] = []
            for _ in 0..<requests {
                let start = ContinuousClock.now
                let (status, _) = try client.request("GET \(path)")
                guard status == 200 else { throw ValidationError("\(path) answered \(status)") }
                times.append(seconds(since: start))
            }
            say(
                "\(name): median \(format(median(times) * 1000, 2)) ms, p95 \(format(percentile(times, 95) * 1000, 2)) ms"
                    + " = \(format(median(times) / rtt, 0))x the raw round trip",
                ["\(path == "/api/status" ? "status" : "feed").medianMs": median(times) * 1000]
            )
        }

        try measureUpload(client, raw: raw)
        let peak =
            try String(contentsOfFile: "/proc/\(node.pid)/status", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        say("node peak memory after the uploads: \(peak.split(separator: " ").dropFirst().joined(separator: " "))")
    }

    /// Times RUNS uploads of UPLOADMB MiB through `POST /api/posts`, beside `raw` (loopback TCP, bytes/s).
    func measureUpload(_ client: KeepAliveClient, raw: Double) throws {
        // The upload is not an image: it is streamed, hashed and synced whole, then refused (415) after its header
        // is read, so the figure is the upload path alone, and nothing is stored.
        var speeds: [Double] = []
        let body = Self.multipart(size: uploadMB * 1_048_576)
        for run in 1...runs {
            let start = ContinuousClock.now
            let (status, _) = try client.request(
                "POST /api/posts",
                headers: ["Content-Type": "multipart/form-data; boundary=bench-boundary"],
                body: body
            )
            let elapsed = seconds(since: start)
            guard status == 415 else { throw ValidationError("the upload answered \(status)") }
            speeds.append(Double(body.count) / elapsed)
            say("upload run \(run): \(format(Double(body.count) / elapsed / 1e6)) MB/s")
        }
        say(
            "upload of \(uploadMB) MiB through POST /api/posts: median \(format(median(speeds) / 1e6)) MB/s = "
                + "\(format(median(speeds) / raw, 2))x raw loopback TCP",
            ["upload.MBPerSecond": median(speeds) / 1e6, "upload.toLoopback": median(speeds) / raw]
        )
    }

    static func multipart(size: Int) -> Data {
        var body = Data(
            "--bench-boundary\r\nContent-Disposition: form-data; name=\"caption\"\r\n\r\nbench\r\n".utf8
        )
        body.append(
            Data(
                ("--bench-boundary\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"bench.bin\"\r\n"
                    + "Content-Type: application/octet-stream\r\n\r\n").utf8
            )
        )
        body.append(Data(repeating: 0x5A, count: size))
        body.append(Data("\r\n--bench-boundary--\r\n".utf8))
        return body
    }

    /// Bytes per second through one loopback TCP connection, plain sockets, 256 KiB writes.
    static func loopbackThroughput(bytes: Int) throws -> Double {
        let (listener, port) = try PushBench.loopbackListener()
        defer { close(listener) }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let peer = accept(listener, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 262_144)
            while recv(peer, &buffer, buffer.count, 0) > 0 {}
            close(peer)
            done.signal()
        }
        let client = try KeepAliveClient.connect(port: port)
        let chunk = [UInt8](repeating: 0x5A, count: 262_144)
        let start = ContinuousClock.now
        var sent = 0
        while sent < bytes {
            let count = send(client, chunk, min(chunk.count, bytes - sent), 0)
            guard count > 0 else { throw ValidationError("loopback send failed") }
            sent += count
        }
        close(client)
        done.wait()
        return Double(bytes) / seconds(since: start)
    }
}

/// A minimal HTTP/1.1 client on one kept-alive connection, for responses with a Content-Length.
final class KeepAliveClient {
    private let socket: Int32
    private var pending = [UInt8]()

    init(port: Int) throws { socket = try Self.connect(port: port) }

    deinit { close(socket) }

    static func connect(port: Int) throws -> Int32 {
        let descriptor = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        var target = CountingProxy.loopback(port: port)
        let connected = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw ValidationError("cannot connect to 127.0.0.1:\(port)") }
        return descriptor
    }

    /// Sends `METHOD PATH` and returns the status and body.
    func request(_ line: String, headers: [String: String] = [:], body: Data = Data()) throws -> (Int, Data) {
        var head = "\(line) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        var request = Data((head + "\r\n").utf8)
        request.append(body)
        try request.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = send(socket, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                guard sent > 0 else { throw ValidationError("send failed") }
                offset += sent
            }
        }
        let marker: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            try fill()
            headEnd = pending.indices.dropLast(3).first { pending[$0..<$0 + 4].elementsEqual(marker) }
        }
        let headText = String(decoding: pending[..<headEnd!], as: UTF8.self)
        let lines = headText.components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        let length =
            lines.dropFirst().first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        let start = headEnd! + 4
        while pending.count < start + length { try fill() }
        let responseBody = Data(pending[start..<start + length])
        pending.removeFirst(start + length)
        return (status, responseBody)
    }

    private func fill() throws {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(socket, &buffer, buffer.count, 0)
        guard count > 0 else { throw ValidationError("the connection closed") }
        pending += buffer[0..<count]
    }
}
