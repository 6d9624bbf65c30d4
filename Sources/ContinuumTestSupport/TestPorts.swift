import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Loopback ports for nodes under test that keep their port across restarts, or are told each other's ports before
/// they start.
///
/// A port the kernel picked (`bind` to port 0) lies in its ephemeral range, from which it also picks the local port
/// of every outgoing connection: while a node is down, or not yet started, a connection of another node can take its
/// port, and the node's `run` then fails with "Address already in use" (seen in CI: the eighth node of a crowd of
/// twelve, started after seven others had dialled for seconds). Ports handed out here lie below that range, where no
/// connection's local port comes from, are free when handed out, and are never handed out twice by one process.
public enum TestPorts {
    private static let handedOut = Mutex<Set<Int>>([])

    /// The lowest port of the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`; 32768 if unread).
    static var ephemeralLow: Int {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        // A missing or unreadable file (not Linux): 32768, the range's usual start.
        return text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32768
    }

    /// A loopback TCP port below the ephemeral range that nothing listens on now and this process did not hand out.
    public static func reserve() throws -> Int {
        let high = min(ephemeralLow, 65536)
        let low = max(1024, min(20000, high - 4096))
        for _ in 0..<1000 {
            let port = Int.random(in: low..<high)
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh, try isFree(port) { return port }
        }
        throw TestPortsError()
    }

    /// Whether a TCP socket can bind 127.0.0.1:`port` now; throws when no socket can be had at all (out of file
    /// descriptors), which no other port would mend.
    static func isFree(_ port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestPortsError(reason: "socket(): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var yes: Int32 = 1
        // As the node's listener does (SO_REUSEADDR): a port in TIME_WAIT after an earlier test is free to it too.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

extension TestPorts {
    /// A socket listening on 127.0.0.1 at a port from ``TestPorts/reserve()``: a port another program holds, for
    /// tests of what a node says when it cannot listen.
    public final class Listener: Sendable {
        public let port: Int
        private let fd: Int32

        /// Binds a reserved port; a port that passed ``TestPorts/reserve()`` but cannot be bound now (another test
        /// process took it in between) is passed over for the next one, up to 100 times.
        public init() throws {
            var lastError: Int32 = 0
            for _ in 0..<100 {
                let port = try TestPorts.reserve()
                let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                guard fd >= 0 else { throw TestPortsError(reason: "socket(): \(String(cString: strerror(errno)))") }
                var yes: Int32 = 1
                // As the node's listener and `isFree` do: a port left in TIME_WAIT by an earlier test binds.
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
                var address = TestPorts.loopback(port)
                let listening = withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && listen(fd, 1) == 0
                    }
                }
                if listening {
                    self.port = port
                    self.fd = fd
                    return
                }
                lastError = errno
                Glibc.close(fd)
            }
            throw TestPortsError(
                reason: "100 reserved ports would not listen; last: \(String(cString: strerror(lastError)))"
            )
        }

        /// Stops listening: the port is free again.
        public func close() { Glibc.close(fd) }
    }
}

extension TestPorts {
    /// 127.0.0.1:`port` as a socket address.
    static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}

/// No loopback port could be had: none free below the ephemeral range after 1,000 tries, or the socket calls failed.
public struct TestPortsError: Error, CustomStringConvertible {
    public var reason = "no free loopback port below the ephemeral range after 1,000 tries"
    public var description: String { reason }
}
