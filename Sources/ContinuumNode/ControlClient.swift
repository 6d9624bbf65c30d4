import ContinuumStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the control socket could not be used, in words for a person.
public struct ControlError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A line-oriented connection to a running node's control socket (``ControlServer``), for the commands that talk
/// to the node and for tools.
public final class ControlClient {
    private let descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to the node running on `directory`; throws ``ControlError`` when none is.
    public convenience init(_ directory: DataDirectory) throws {
        try self.init(path: ControlServer.socketURL(directory).path, directory: directory.path)
    }

    init(path: String, directory: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ControlError("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ControlError("the data directory path is too long for a control socket: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw ControlError(
                "no node is running on \(directory); start one with 'continuum-node run' (in another terminal)"
            )
        }
        descriptor = fd
    }

    deinit { close(descriptor) }

    /// The sync port of the node running on `directory`; throws ``ControlError`` when none runs.
    public static func listeningPort(_ directory: DataDirectory) throws -> Int {
        let client = try ControlClient(directory)
        try client.send(.listening)
        while let reply = try client.reply() {
            if case .listening(let port) = reply, port > 0 { return port }
            if let failure = reply.failure { throw failure }
        }
        throw ControlError("the node did not say where it listens")
    }

    /// Sends one request to the node running on `directory`, if any, and waits for its first reply line; does
    /// nothing when no node runs. For hints that only speed things up, such as "records were just stored".
    public static func tell(_ directory: DataDirectory, _ request: ControlRequest) {
        guard let client = try? ControlClient(directory) else { return }
        // A hint must never hang the command: give up on a node that does not answer within 2 s.
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(client.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(client.descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // A hint that fails changes nothing: the node finds the same records by polling the store.
        try? client.send(request)
        _ = try? client.readLine()
    }

    /// Sends a request (one line).
    public func send(_ request: ControlRequest) throws {
        var bytes = [UInt8](try JSONEncoder().encode(request))
        bytes.append(UInt8(ascii: "\n"))
        guard write(descriptor, bytes, bytes.count) == bytes.count else {
            throw ControlError("cannot talk to the node: \(String(cString: strerror(errno)))")
        }
    }

    /// The next reply; nil when the node closed the connection. Throws the message of a `.failed` reply.
    public func reply() throws -> ControlReply? {
        guard let line = try readLine() else { return nil }
        let reply: ControlReply
        do {
            reply = try JSONDecoder().decode(ControlReply.self, from: Data(line.utf8))
        } catch {
            throw ControlError(
                "the running node answered in a way this command does not understand; is it another version? "
                    + "Restart it with this one"
            )
        }
        if let failure = reply.failure { throw failure }
        return reply
    }

    /// The next line as the node sent it, without the newline; nil when the node closed the connection. After
    /// `.watching`, each line is a ``WatchEvent``.
    public func readLine() throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(descriptor, &chunk, chunk.count)
            if count <= 0 { return nil }
            buffer += chunk[..<count]
        }
    }
}
