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
/// Requests and replies are lines of JSON. `{"command":"sync"}` starts an anti-entropy round with every peer and
/// replies with progress lines (`{"event":"progress",…}`) and a last line `{"event":"done",…}`.
/// `{"command":"connected"}` replies `{"connected":[node ids],"interest":{node id: posts it wants pushed}}`.
/// `{"command":"stored"}` says another process just stored records: the node sends them to its peers now rather
/// than at its next look (within 50 ms); it replies `{"ok":true}`. `{"command":"follows-changed"}` makes the node re-read the followed posts and tell its peers; it replies
/// `{"ok":true}`. `{"command":"watch"}` replies `{"type":"watching",…}`, then one ``WatchEvent`` per line until
/// either side closes.
final class ControlServer: Sendable {
    private let node: Node
    private let logger: Logger

    init(node: Node, logger: Logger) {
        self.node = node
        self.logger = logger
    }

    static func socketURL(_ directory: DataDirectory) -> URL { directory.url.appendingPathComponent("control.sock") }

    typealias LineChannel = NIOAsyncChannel<ByteBuffer, ByteBuffer>

    func bind(group: any EventLoopGroup) async throws -> NIOAsyncChannel<LineChannel, Never> {
        let path = Self.socketURL(node.directory).path
        let server = try await ServerBootstrap(group: group)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { channel in
                channel.eventLoop.makeCompletedFuture { try LineChannel(wrappingChannelSynchronously: channel) }
            }
        // Only this user may talk to the node (the data directory is 0700 as well).
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return server
    }

    func serve(_ server: NIOAsyncChannel<LineChannel, Never>) async {
        // Ends when the node closes the socket at shutdown (an error then is the close itself); one bad
        // connection never ends it, since each is handled in its own task.
        try? await server.executeThenClose { inbound in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in inbound {
                    group.addTask { await self.handle(connection) }
                }
            }
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
                let line = Array(pending[..<newline])
                // A line that is not JSON is an unknown command (answered below), not an error of the node.
                let request = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
                let reply: @Sendable ([String: any Sendable]) async throws -> Void = { object in
                    var data = try JSONSerialization.data(withJSONObject: object, options: .sortedKeys)
                    data.append(UInt8(ascii: "\n"))
                    try await outbound.write(ByteBuffer(bytes: data))
                }
                switch request?["command"] as? String {
                case "sync":
                    try await sync(reply: reply)
                case "fetch":
                    guard let hex = request?["sha256"] as? String, let hash = AssetHash(hex: hex) else {
                        try await reply(["error": "fetch needs \"sha256\": 64 hex digits"])
                        return
                    }
                    try await fetch(hash, reply: reply)
                case "discovery":
                    // Replies {"discovery":{state, lastError, peersSeen, ...}}: LAN discovery's state, for
                    // `status` (Docs/CLI.md).
                    var data = try JSONEncoder().encode(["discovery": node.discoveryStatus])
                    data.append(UInt8(ascii: "\n"))
                    try await outbound.write(ByteBuffer(bytes: data))
                case "connected":
                    let peers = await node.engine.connectedPeers().map(\.hex)
                    let interest = await node.engine.peerInterest()
                    let counts = Dictionary(uniqueKeysWithValues: interest.map { ($0.key.hex, $0.value) })
                    try await reply(["connected": peers, "interest": counts])
                case "stored":
                    await node.engine.recordsWritten()
                    try await reply(["ok": true])
                case "follows-changed":
                    await node.engine.followsChanged()
                    try await reply(["ok": true])
                case "watch":
                    let events = await node.engine.events()
                    try await reply([
                        "type": "watching", "node": node.identity.author.hex,
                        "at": Timestamp.now().rfc3339, "summary": "watching node \(node.identity.author.short)",
                    ])
                    for await event in events {
                        var line = try WatchEvent(event).jsonLine()
                        line.append(UInt8(ascii: "\n"))
                        try await outbound.write(ByteBuffer(bytes: line))
                    }
                default:
                    try await reply([
                        "error":
                            "unknown request; expected a command: sync, fetch, connected, stored, follows-changed or watch"
                    ])
                }
                return
            }
        }
    }

    private func fetch(
        _ hash: AssetHash,
        reply: @escaping @Sendable ([String: any Sendable]) async throws -> Void
    )
        async throws
    {
        if try await node.store.hasPhoto(hash) {
            try await reply(["event": "done", "sha256": hash.hex, "path": node.store.assets.url(for: hash).path])
            return
        }
        let events = await node.engine.events()
        // Marked for fetching whatever happens next: a peer that has it may connect later.
        await node.engine.fetchPhoto(hash)
        guard !(await node.engine.connectedPeers().isEmpty) else {
            try await reply([
                "error": "no peer is connected; the node will fetch the photo when a peer that has it connects"
            ])
            return
        }
        let path = node.store.assets.url(for: hash).path
        let arrived = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await event in events {
                    switch event {
                    case .photoProgress(let got, let bytes, let total) where got == hash:
                        try await reply(["event": "progress", "bytes": bytes, "ofBytes": total])
                    case .photoArrived(let got) where got == hash:
                        return true
                    default:
                        break
                    }
                }
                return false
            }
            group.addTask {
                try await Task.sleep(for: .seconds(120))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
        let here = try await node.store.hasPhoto(hash)
        if arrived || here {
            try await reply(["event": "done", "sha256": hash.hex, "path": path])
        } else {
            try await reply([
                "error": "the photo did not arrive within 120 s: no connected peer has it yet; the node keeps trying"
            ])
        }
    }

    private func sync(reply: @escaping @Sendable ([String: any Sendable]) async throws -> Void) async throws {
        let events = await node.engine.events()
        let peers = await node.engine.connectedPeers().count
        let forward = Task {
            for await event in events {
                if case .progress(let from, let records, let ofRecords, let bytes, let ofBytes) = event {
                    // Progress is informative: a `sync` client that left misses it, and the final reply says all.
                    try? await reply([
                        "event": "progress", "peer": from.hex, "records": records, "ofRecords": ofRecords,
                        "bytes": bytes, "ofBytes": ofBytes,
                    ])
                }
            }
        }
        let completed = await node.engine.syncNow(timeout: .seconds(120))
        forward.cancel()
        try await reply(["event": "done", "peers": peers, "completed": completed])
    }
}
