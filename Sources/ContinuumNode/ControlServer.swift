import ContinuumCore
import ContinuumDiscovery
import ContinuumStore
import ContinuumSync
import Foundation
import Logging
import NIOCore
import NIOPosix

/// The local control channel: a Unix socket in the data directory (mode 0600 inside a 0700 directory) through
/// which the other commands reach the running node.
///
/// A client sends one ``ControlRequest`` as a line of JSON; the node answers with ``ControlReply`` lines (and, for
/// `.watch`, ``WatchEvent`` lines after the first), then closes the connection.
final class ControlServer: Sendable {
    private let node: Node
    private let logger: Logger
    /// Connections accepted and not yet taken by ``serve(_:)`` (``UnclaimedConnections``).
    private let unclaimed = UnclaimedConnections<ByteBuffer, ByteBuffer>()

    init(node: Node, logger: Logger) {
        self.node = node
        self.logger = logger
    }

    static func socketURL(_ directory: DataDirectory) -> URL { directory.url.appendingPathComponent("control.sock") }

    typealias LineChannel = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    func bind(group: any EventLoopGroup) async throws -> NIOAsyncChannel<LineChannel, Never> {
        let path = Self.socketURL(node.directory).path
        let unclaimed = self.unclaimed
        let server = try await ServerBootstrap(group: group)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = try LineChannel(wrappingChannelSynchronously: channel)
                    unclaimed.hold(connection)
                    return connection
                }
            }
        // Only this user may talk to the node (the data directory is 0700 as well).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return server
    }

    func serve(_ server: NIOAsyncChannel<LineChannel, Never>) async {
        // Ends when the node closes the socket at shutdown (an error then is the close itself); one bad
        // connection never ends it, since each is handled in its own task. The accept loop is never cancelled: NIO
        // drops the connections it holds when it is, and one dropped that way traps (apple/swift-nio#2813). On
        // cancellation the socket is closed, and the loop ends after the connections it still holds.
        let loop = Task {
            try? await server.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound where self.unclaimed.claim(connection) {
                        group.addTask { await self.handle(connection) }
                    }
                    group.cancelAll()
                }
            }
        }
        await withTaskCancellationHandler {
            await loop.value
        } onCancel: {
            server.channel.close(promise: nil)
        }
    }

    /// Sends reply lines to one client.
    struct Replies: Sendable {
        let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

        func send(_ reply: ControlReply) async throws { try await write(JSONEncoder().encode(reply)) }

        func write(_ line: Data) async throws {
            var bytes = ByteBuffer(bytes: line)
            bytes.writeInteger(UInt8(ascii: "\n"))
            try await outbound.write(bytes)
        }
    }

    private func handle(_ connection: LineChannel) async {
        // A command whose client went away has nobody to tell of an error: the connection just ends.
        try? await connection.executeThenClose { inbound, outbound in
            var pending = [UInt8]()
            for try await buffer in inbound {
                pending += buffer.readableBytesView
                guard pending.count <= 4096 else { return }
                guard let newline = pending.firstIndex(of: UInt8(ascii: "\n")) else { continue }
                let replies = Replies(outbound: outbound)
                do {
                    let request = try JSONDecoder().decode(ControlRequest.self, from: Data(pending[..<newline]))
                    try await answer(request, replies)
                } catch is DecodingError {
                    // A line that is not a request is an unknown command (a client of another version), not an
                    // error of the node.
                    try await replies.send(
                        .failed(
                            "unknown request; expected a command: sync, fetch, connected, stored, follows-changed or watch"
                        )
                    )
                }
                return
            }
        }
    }

    private func answer(_ request: ControlRequest, _ replies: Replies) async throws {
        switch request {
        case .sync:
            try await sync(replies)
        case .fetch(let photo):
            try await fetch(photo, replies)
        case .discovery:
            try await replies.send(.discovery(node.discoveryStatus))
        case .listening:
            try await replies.send(.listening(port: node.listeningAddresses.first?.port ?? 0))
        case .join(let text):
            do {
                let group = try await node.join(try InviteCode(parsing: text))
                try await replies.send(.joined(group: group))
            } catch {
                try await replies.send(.failed("\(error)"))
            }
        case .joinOpen(let name):
            do {
                try await replies.send(.joined(group: try await node.joinOpen(name)))
            } catch {
                try await replies.send(.failed("\(error)"))
            }
        case .ask(let host, let port, let peer, let wait):
            for await progress in node.ask(PeerAddress(host: host, port: port), node: peer, timeout: .seconds(wait)) {
                switch progress {
                case .pending(let message): try await replies.send(.pending(message))
                case .joined(let group): try await replies.send(.joined(group: group))
                case .failed(let message): try await replies.send(.failed(message))
                }
            }
        case .connected:
            let peers = await node.engine.connectedPeers()
            let traffic = await node.engine.liveTraffic().mapValues(LiveTraffic.init)
            try await replies.send(
                .connected(peers: peers, interest: await node.engine.peerInterest(), traffic: traffic)
            )
        case .stored:
            await node.engine.recordsWritten()
            try await replies.send(.ok)
        case .followsChanged:
            await node.engine.followsChanged()
            try await replies.send(.ok)
        case .truncateWAL:
            await node.store.truncateWALInBackground()
            try await replies.send(.ok)
        case .watch:
            let events = await node.engine.events()
            try await replies.send(.watching(node: node.identity.author, at: .now()))
            let store = node.store
            for await event in events {
                let named = await WatchEvent.named(event) { await store.nameForWatch($0) }
                try await replies.write(try named.jsonLine())
            }
        }
    }

    private func fetch(_ hash: AssetHash, _ replies: Replies) async throws {
        if try await node.store.hasPhoto(hash) {
            try await replies.send(.photoStored(path: try await node.store.photoFile(hash).path))
            return
        }
        guard try await node.store.isPhotoShown(hash) else {
            try await replies.send(
                .failed("no post here shows photo \(hash.short): it was deleted (and erased), or its post has not come")
            )
            return
        }
        let events = await node.engine.events()
        // Marked for fetching whatever happens next: a peer that has it may connect later.
        await node.engine.fetchPhoto(hash)
        guard !(await node.engine.connectedPeers().isEmpty) else {
            try await replies.send(
                .failed("no peer is connected; the node will fetch the photo when a peer that has it connects")
            )
            return
        }
        _ = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .photoProgress(let got, let bytes, let total) where got == hash:
                        try await replies.send(.photoProgress(bytes: bytes, ofBytes: total))
                    case .photoArrived(let got) where got == hash:
                        return true
                    default:
                        break
                    }
                }
                return false
            }
            // Up to 120 s, ending early when the photo is erased meanwhile (the node then stops fetching it).
            group.addTask { [store = node.store] in
                for _ in 0..<120 {
                    try await Task.sleep(for: .seconds(1))
                    if try await !store.isPhotoShown(hash) { break }
                }
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        // Arrived and kept: a photo erased as it came is not announced, and its file is gone.
        if try await node.store.hasPhoto(hash) {
            try await replies.send(.photoStored(path: try await node.store.photoFile(hash).path))
        } else if try await !node.store.isPhotoShown(hash) {
            try await replies.send(.failed("photo \(hash.short) was erased while it came: its post was deleted"))
        } else {
            try await replies.send(
                .failed("the photo did not arrive within 120 s: no connected peer has it yet; the node keeps trying")
            )
        }
    }

    private func sync(_ replies: Replies) async throws {
        let events = await node.engine.events()
        let peers = await node.engine.connectedPeers().count
        let forward = Task {
            for await event in events {
                if case .progress(let from, let records, let ofRecords, let bytes, let ofBytes) = event {
                    // Progress is informative: a `sync` client that left misses it, and the final reply says all.
                    try? await replies.send(
                        .syncProgress(
                            peer: from,
                            records: records,
                            ofRecords: ofRecords,
                            bytes: bytes,
                            ofBytes: ofBytes
                        )
                    )
                }
            }
        }
        let completed = await node.engine.syncNow(timeout: .seconds(120))
        forward.cancel()
        try await replies.send(.synced(peers: peers, completed: completed))
    }
}
