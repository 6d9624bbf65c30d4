import ContinuumCore
import NIOCore
import NIOPosix
import NIOSSL

/// Baselines for the benchmarks, measured with the same stack the node uses: the raw throughput of a mutual
/// TLS 1.3 connection on loopback (same certificates, same library).
public enum LoopbackBaseline {
    typealias Bytes = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    /// A TLS server on 127.0.0.1 and a free port, for a fresh identity, with the node's TLS settings.
    private static func listen(group: any EventLoopGroup) async throws -> NIOAsyncChannel<Bytes, Never> {
        let server = try TLSIdentity(.generate())
        return try await ServerBootstrap(group: group)
            .bind(host: "127.0.0.1", port: 0) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(server.serverHandler())
                    return try Bytes(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// A TLS connection to 127.0.0.1:`port` as `client`.
    private static func connect(port: Int, as client: TLSIdentity, group: any EventLoopGroup) async throws -> Bytes {
        try await ClientBootstrap(group: group)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(try client.clientHandler(expected: nil))
                    return try Bytes(wrappingChannelSynchronously: channel)
                }
            }
    }

    /// MB/s (10^6 bytes per second) of `bytes` pushed through one TLS connection on loopback, in 64 KiB writes.
    public static func tlsThroughput(bytes: Int, group: any EventLoopGroup) async throws -> Double {
        let client = try TLSIdentity(.generate())
        let listener = try await listen(group: group)
        let port = listener.channel.localAddress!.port!
        return try await withThrowingTaskGroup(of: Double.self) { tasks in
            tasks.addTask {
                try await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        return try await connection.executeThenClose { input, _ in
                            var received = 0
                            let start = ContinuousClock.now
                            for try await buffer in input {
                                received += buffer.readableBytes
                                if received >= bytes { break }
                            }
                            let elapsed = ContinuousClock.now - start
                            let seconds =
                                Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                            return Double(received) / seconds / 1e6
                        }
                    }
                    return 0
                }
            }
            let connection = try await connect(port: port, as: client, group: group)
            return try await connection.executeThenClose { _, output in
                let chunk = ByteBuffer(repeating: 0x5A, count: 64 * 1024)
                var sent = 0
                while sent < bytes {
                    try await output.write(chunk)
                    sent += chunk.readableBytes
                }
                // Keep the connection open until the server has read everything.
                let rate = try await tasks.next() ?? 0
                tasks.cancelAll()
                // The measurement is taken; a listener that fails to close changes nothing of it.
                try? await listener.channel.close()
                return rate
            }
        }
    }

    /// One mutual TLS 1.3 connection between two fresh identities, with the node's TLS settings: the client
    /// dials `dialPort(server port)` (so that a counting relay can sit in between), sends one byte, gets it
    /// back, and closes. What crosses is the handshake, session tickets included, and two one-byte records.
    public static func tlsHandshake(group: any EventLoopGroup, dialPort: (Int) throws -> Int) async throws {
        let client = try TLSIdentity(.generate())
        let listener = try await listen(group: group)
        let port = try dialPort(listener.channel.localAddress!.port!)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                try await listener.executeThenClose { inbound in
                    for try await connection in inbound {
                        try await connection.executeThenClose { input, output in
                            for try await buffer in input {
                                try await output.write(buffer)
                                break
                            }
                        }
                        return
                    }
                }
            }
            let connection = try await connect(port: port, as: client, group: group)
            try await connection.executeThenClose { input, output in
                try await output.write(ByteBuffer(bytes: [1]))
                for try await _ in input { break }
            }
            try await tasks.next()
            // As above: the figure is in; closing the throwaway listener cannot change it.
            try? await listener.channel.close()
        }
    }
}
