import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 response as a test sees it.
struct HTTPTestResponse: Sendable {
    let status: Int
    /// Header names in lower case.
    let headers: [String: String]
    let body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: Any? { try? JSONSerialization.jsonObject(with: body) }
    var object: [String: Any] { json as? [String: Any] ?? [:] }
    /// The `error` code of an API error body.
    var errorCode: String? { object["error"] as? String }
    var errorMessage: String { object["message"] as? String ?? "" }
}

/// A small blocking HTTP/1.1 client over a plain socket to 127.0.0.1, so that the tests see exactly the bytes the
/// node sends (no client library rewriting headers). Blocking calls run on a dispatch queue, not the test's task.
struct HTTPTestClient: Sendable {
    let port: Int
    var headers: [String: String] = [:]

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPTestResponse {
        try await request("GET", path, headers: headers)
    }

    func send(_ method: String, _ path: String, json: Any) async throws -> HTTPTestResponse {
        let body = try JSONSerialization.data(withJSONObject: json)
        return try await request(method, path, headers: ["Content-Type": "application/json"], body: body)
    }

    /// A multipart/form-data upload: text fields, and files as (name, filename, bytes).
    func upload(
        _ path: String = "/api/posts",
        method: String = "POST",
        fields: [(String, String)],
        files: [(String, String, Data)]
    ) async throws -> HTTPTestResponse {
        let boundary = "----continuum-test-\(UUID().uuidString)"
        var body = Data()
        for (name, value) in fields {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n".utf8))
            body.append(Data(value.utf8))
            body.append(Data("\r\n".utf8))
        }
        for (name, filename, bytes) in files {
            body.append(
                Data(
                    ("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n"
                        + "Content-Type: application/octet-stream\r\n\r\n").utf8
                )
            )
            body.append(bytes)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return try await request(
            method,
            path,
            headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"],
            body: body
        )
    }

    func request(
        _ method: String,
        _ path: String,
        headers extra: [String: String] = [:],
        body: Data? = nil
    ) async throws -> HTTPTestResponse {
        var all = ["Host": "127.0.0.1:\(port)", "Connection": "close"]
        for (name, value) in headers { all[name] = value }
        for (name, value) in extra { all[name] = value }
        if let body { all["Content-Length"] = "\(body.count)" }
        var head = "\(method) \(path) HTTP/1.1\r\n"
        for (name, value) in all.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        var request = Data(head.utf8)
        if let body { request.append(body) }
        let bytes = request
        let port = self.port
        let raw = try await Self.blocking {
            let socket = try Self.connect(port)
            defer { close(socket) }
            try Self.write(socket, bytes)
            return try Self.readToEnd(socket)
        }
        return try Self.parse(raw)
    }

    /// Sends exactly `bytes` (a request written by hand: chunked, or with a `Content-Length` its body does not have)
    /// and reads the answer until the node closes the connection.
    func raw(_ bytes: Data) async throws -> HTTPTestResponse {
        let port = self.port
        let answer = try await Self.blocking {
            let socket = try Self.connect(port)
            defer { close(socket) }
            try Self.write(socket, bytes)
            return try Self.readToEnd(socket)
        }
        return try Self.parse(answer)
    }

    /// Opens `path` as an event stream and reads until `until` holds for the text so far, or `timeout`.
    func stream(
        _ path: String,
        timeout: Duration,
        whenConnected: @escaping @Sendable () -> Void = {},
        until: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let head =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n"
            + headers.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n"
        let port = self.port
        let seconds = Double(timeout.components.seconds)
        return try await Self.blocking {
            // Called once: when the node says ": connected" (it has subscribed this stream), else when the read ends.
            var connected = false
            defer { if !connected { whenConnected() } }
            let socket = try Self.connect(port)
            defer { close(socket) }
            try Self.write(socket, Data(head.utf8))
            var received = Data()
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while Date() < deadline {
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 100) > 0 else { continue }
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received.append(contentsOf: buffer[0..<count])
                let text = String(decoding: received, as: UTF8.self)
                if !connected, text.contains(": connected") {
                    connected = true
                    whenConnected()
                }
                if until(text) { break }
            }
            return String(decoding: received, as: UTF8.self)
        }
    }

    /// Opens an event stream and returns once the node has subscribed it (its ": connected" line), so that whatever
    /// the test does next is on the stream: await the task for what was received until `until` held.
    func subscribe(
        _ path: String,
        timeout: Duration,
        until: @escaping @Sendable (String) -> Bool
    ) async -> Task<String, any Error> {
        let (connected, signal) = AsyncStream<Void>.makeStream()
        let task = Task { try await stream(path, timeout: timeout, whenConnected: { signal.finish() }, until: until) }
        for await _ in connected {}
        return task
    }

    // MARK: Sockets

    /// Runs blocking socket work on a thread of its own, never on the cooperative pool (two threads on two cores).
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }

    static func connect(_ port: Int) throws -> Int32 {
        let socket = try connectLoopback(port, receiveTimeout: 30)
        // A node that answers (413) before it has read the body stops reading it: a send that makes no progress for
        // 10 s gives up, and the client reads the answer, instead of waiting forever.
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return socket
    }

    /// A TCP socket connected to 127.0.0.1:`port` (shared with the hostile tests' raw client).
    static func connectLoopback(_ port: Int, receiveTimeout: Int?) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw Failure(description: "connect to port \(port): \(reason)")
        }
        if let receiveTimeout {
            var timeout = timeval(tv_sec: receiveTimeout, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        return descriptor
    }

    static func write(_ socket: Int32, _ data: Data) throws {
        var offset = 0
        data.withUnsafeBytes { raw in
            while offset < raw.count {
                let sent = Glibc.send(socket, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                // The node may answer (413, 400) and close before reading the whole body: that is fine.
                if sent <= 0 { return }
                offset += sent
            }
        }
    }

    /// Reads one response from a connection that stays open: its head, then `Content-Length` bytes of body.
    static func readOne(_ socket: Int32) throws -> HTTPTestResponse {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if let split = received.firstRange(of: Data("\r\n\r\n".utf8)) {
                let response = try parse(received)
                let length = Int(response.headers["content-length"] ?? "") ?? 0
                if received.count - split.upperBound >= length { return response }
            }
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else {
                throw Failure(description: "the connection ended after \(received.count) bytes of a response")
            }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    /// What ``trickle(_:_:every:for:filler:)`` saw.
    struct Trickle: Sendable {
        /// How long after the trickle began the node closed the connection; nil when it did not, within the limit.
        let closedAfter: Duration?
        /// The bytes sent before that.
        let sent: Int
        /// What the node sent back, if anything.
        let received: Data
    }

    /// Sends `text` one byte at a time, `interval` apart, and after it (with `filler`) header lines (`X-Slow: 1`) the
    /// same way, never ending the head, until the node closes the connection or `limit` has passed. Blocking.
    static func trickle(
        _ socket: Int32,
        _ text: String,
        every interval: Duration,
        for limit: Duration,
        filler: Bool = true
    ) -> Trickle {
        let clock = ContinuousClock()
        let start = clock.now
        let bytes = Array(text.utf8)
        let line = Array("X-Slow: 1\r\n".utf8)
        var sent = 0
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while clock.now - start < limit {
            if sent < bytes.count || filler {
                var byte = sent < bytes.count ? bytes[sent] : line[(sent - bytes.count) % line.count]
                guard Glibc.send(socket, &byte, 1, Int32(MSG_NOSIGNAL)) == 1 else {
                    return Trickle(closedAfter: clock.now - start, sent: sent, received: received)
                }
                sent += 1
            }
            let next = clock.now + interval
            while clock.now < next {
                var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let (seconds, attoseconds) = (clock.now.duration(to: next)).components
                let milliseconds = Int32(clamping: max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
                guard poll(&poller, 1, milliseconds) > 0 else { continue }
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { return Trickle(closedAfter: clock.now - start, sent: sent, received: received) }
                received.append(contentsOf: buffer[0..<count])
            }
        }
        return Trickle(closedAfter: nil, sent: sent, received: received)
    }

    static func readToEnd(_ socket: Int32) throws -> Data {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count < 0 && received.isEmpty {
                throw Failure(description: "recv: \(String(cString: strerror(errno)))")
            }
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return received
    }

    static func parse(_ raw: Data) throws -> HTTPTestResponse {
        guard let split = raw.firstRange(of: Data("\r\n\r\n".utf8)) else {
            throw Failure(description: "no complete response head in \(raw.count) bytes")
        }
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(head[0])")
        }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                .trimmingCharacters(in: .whitespaces)
        }
        var body = Data(raw[split.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return HTTPTestResponse(status: status, headers: headers, body: body)
    }

    static func dechunk(_ data: Data) -> Data {
        var out = Data()
        var index = data.startIndex
        while index < data.endIndex, let lineEnd = data[index...].firstRange(of: Data("\r\n".utf8)) {
            let sizeText = String(decoding: data[index..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";")[0], radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            let end = min(start + size, data.endIndex)
            out.append(data[start..<end])
            index = min(end + 2, data.endIndex)
        }
        return out
    }
}
