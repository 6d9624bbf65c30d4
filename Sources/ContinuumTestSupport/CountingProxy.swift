import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on loopback that counts the bytes crossing it each way: "bytes on the wire", TLS included. An
/// observer, if given, sees every byte relayed, by connection (numbered from 1) and direction, in order.
public final class CountingProxy: Sendable {
    public let port: Int
    private let listener: Int32
    private let target: Int
    /// Bytes from the dialling side to the target, and back.
    public let counts = Mutex<(up: Int, down: Int)>((0, 0))
    public typealias Observer = @Sendable (_ connection: Int, _ bytes: ArraySlice<UInt8>, _ up: Bool) -> Void
    private let observer: Observer?
    private let connections = Atomic<Int>(0)

    public init(to target: Int, observer: Observer? = nil) throws {
        self.target = target
        self.observer = observer
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        guard
            withUnsafePointer(
                to: &address,
                {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
            ) == 0, listen(fd, 16) == 0
        else { throw POSIXError(.EADDRINUSE) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: bound.sin_port))
        listener = fd
        Thread.detachNewThread { [self] in self.acceptLoop() }
    }

    public static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    public func reset() { counts.withLock { $0 = (0, 0) } }

    public func close() { shutdown(listener, Int32(SHUT_RDWR)) }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if connected != 0 {
                Glibc.close(client)
                Glibc.close(upstream)
                continue
            }
            let connection = connections.add(1, ordering: .relaxed).newValue
            Thread.detachNewThread { [self] in self.pump(from: client, to: upstream, up: true, connection) }
            Thread.detachNewThread { [self] in self.pump(from: upstream, to: client, up: false, connection) }
        }
    }

    private func pump(from source: Int32, to destination: Int32, up: Bool, _ connection: Int) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = read(source, &buffer, buffer.count)
            if count <= 0 { break }
            observer?(connection, buffer[0..<count], up)
            var written = 0
            while written < count {
                // send with MSG_NOSIGNAL: a side that closed (a node killed by a test) is an error here, not a SIGPIPE.
                let result = buffer.withUnsafeBytes {
                    send(destination, $0.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL))
                }
                if result <= 0 { break }
                written += result
            }
            counts.withLock { if up { $0.up += count } else { $0.down += count } }
        }
        shutdown(destination, Int32(SHUT_WR))
    }
}
