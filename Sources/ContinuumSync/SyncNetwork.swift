import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A peer's address as typed: `HOST:PORT`, or `[IPv6]:PORT`.
public struct PeerAddress: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[V6]:PORT`; nil when malformed.
    public init?(_ text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty, let port = Int(portText), (1...65535).contains(port) else { return nil }
        self.init(host: String(host), port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A connection carrying sync messages.
public typealias WireChannel = NIOAsyncChannel<WireMessage, WireMessage>

/// Sockets for sync: the listener, the dialers with back-off, and the handshake of every connection.
public final class SyncNetwork: Sendable {
    public let engine: SyncEngine
    /// The node's TLS identity; nil in plaintext mode.
    let tls: TLSIdentity?
    private let group: any EventLoopGroup
    let logger: Logger
    /// Inbound connections accepted and not yet taken by ``serve(_:)`` (``UnclaimedConnections``).
    private let unclaimed = UnclaimedConnections<WireMessage, WireMessage>()

    /// `group` is owned by the caller, who shuts it down after the network has stopped.
    public init(engine: SyncEngine, identity: NodeIdentity, group: any EventLoopGroup, logger: Logger) throws {
        self.engine = engine
        self.tls = engine.configuration.plaintext ? nil : try TLSIdentity(identity)
        self.group = group
        self.logger = logger
    }

    private func configure(_ channel: any Channel, tlsHandler: (any ChannelHandler)?) throws -> WireChannel {
        if let tlsHandler { try channel.pipeline.syncOperations.addHandler(tlsHandler) }
        try channel.pipeline.syncOperations.addHandler(WireDecodingHandler())
        try channel.pipeline.syncOperations.addHandler(WireEncodingHandler())
        // Few decoded messages wait ahead of the session (which charges each to the peer's budget before acting on
        // it): when the session pauses a peer, its socket stops being read after these, and decoding stops too.
        return try WireChannel(
            wrappingChannelSynchronously: channel,
            configuration: .init(backPressureStrategy: .init(lowWatermark: 2, highWatermark: 4))
        )
    }

    // MARK: Listening

    /// Binds the sync port. Serve it with ``serve(_:)``.
    public func bind(host: String, port: Int) async throws -> NIOAsyncChannel<WireChannel, Never> {
        let tls = self.tls
        return try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let connection = try self.configure(channel, tlsHandler: tls?.serverHandler())
                    self.unclaimed.hold(connection)
                    return connection
                }
            }
    }

    /// Accepts connections until cancelled; one bad connection never ends the loop.
    ///
    /// The accept loop runs in a task of its own that is never cancelled: cancelled, NIO's stream of accepted
    /// connections drops those it holds, and a connection dropped that way traps (its writer was never finished,
    /// apple/swift-nio#2813; seen when a crowd of nodes stops while they dial each other). On cancellation the
    /// listening socket is closed instead; the stream then ends after handing out every connection it holds, each
    /// of which is closed at once, and the sessions are cancelled (each says goodbye).
    public func serve(_ server: NIOAsyncChannel<WireChannel, Never>) async {
        let stopping = NIOLockedValueBox(false)
        let logger = self.logger
        let loop = Task {
            do {
                try await server.executeThenClose { inbound in
                    try await withThrowingDiscardingTaskGroup { group in
                        for try await connection in inbound {
                            // Closed before it got here: finished already.
                            guard self.unclaimed.claim(connection) else { continue }
                            guard !stopping.withLockedValue({ $0 }) else {
                                // Only closed, never run: an error closing it leaves nothing to do.
                                group.addTask { try? await connection.executeThenClose { _, _ in } }
                                continue
                            }
                            group.addTask {
                                let host = connection.channel.remoteAddress?.ipAddress ?? "?"
                                _ = await self.run(connection, initiator: false, host: host)
                            }
                        }
                        group.cancelAll()
                    }
                }
            } catch {
                if !stopping.withLockedValue({ $0 }) {
                    logger.error("the sync listener stopped", metadata: ["error": "\(error)"])
                }
            }
        }
        await withTaskCancellationHandler {
            await loop.value
        } onCancel: {
            stopping.withLockedValue { $0 = true }
            server.channel.close(promise: nil)
        }
    }

    // MARK: Dialling

    /// Connects once and runs the session to its end; returns why it ended.
    public func connect(
        to address: PeerAddress,
        expected: AuthorID? = nil,
        join: JoinAttempt? = nil,
        pinned: Bool = false
    ) async -> (reason: String, peer: AuthorID?) {
        let tls = self.tls
        do {
            let connection = try await ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .connect(host: address.host, port: address.port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try self.configure(channel, tlsHandler: try tls?.clientHandler(expected: expected))
                    }
                }
            return await run(connection, initiator: true, pinned: pinned, host: address.host, join: join)
        } catch {
            let whom = join?.isRequest == true || join?.isRecovery == true ? "the node" : "the inviter"
            join?.fail("cannot reach \(whom) at \(address) (is its node running, and is the address right?)")
            return ("cannot connect to \(address): \(error)", nil)
        }
    }

    /// Keeps a connection to `address` up: reconnects with exponential back-off and jitter, and stays idle while
    /// a session with the same peer exists (for example one the peer dialled).
    public func maintain(_ address: PeerAddress) async {
        var attempt = 0
        var known: AuthorID?
        while !Task.isCancelled {
            if let known, await engine.session(for: known) != nil {
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            let started = ContinuousClock.now
            let (reason, peer) = await connect(to: address, pinned: true)
            if let peer { known = peer }
            logger.info("session ended", metadata: ["peer.address": "\(address)", "reason": "\(reason)"])
            attempt = ContinuousClock.now - started > .seconds(10) ? 0 : attempt + 1
            let base = min(60, 0.25 * pow(2, Double(min(attempt, 10))))
            try? await Task.sleep(for: .milliseconds(Int(base * Double.random(in: 0.75...1.25) * 1000)))
        }
    }

    // MARK: Sessions

    /// The handshake, then the session until either side closes. Returns the reason it ended, which is logged.
    ///
    /// Every refusal in the handshake is an ERROR with its code, then the close (``HandshakeMachine``); the
    /// handshake's time limit closes the connection without one (PROTOCOL.md §7.8.3 step 9).
    func run(
        _ connection: WireChannel,
        initiator: Bool,
        pinned: Bool = false,
        host: String,
        join: JoinAttempt? = nil
    ) async -> (reason: String, peer: AuthorID?) {
        let channel = connection.channel
        let timeout = channel.eventLoop.scheduleTask(
            in: .nanoseconds(engine.configuration.handshakeTimeout.nanoseconds)
        ) { channel.close(promise: nil) }
        defer { timeout.cancel() }
        var reason = "closed"
        let learned = NIOLockedValueBox<AuthorID?>(nil)
        do {
            reason = try await connection.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                let end = try await handshake(
                    host: host,
                    join: join,
                    iterator: &iterator,
                    outbound: outbound,
                    channel: channel,
                    learned: learned
                )
                switch end {
                case .established(let outcome):
                    timeout.cancel()
                    let terms = SessionTerms(
                        groups: outcome.groups,
                        initiator: initiator,
                        pin: pinned ? .address : outcome.joined ? .join : .none
                    )
                    return await serveSession(
                        outcome.meeting,
                        terms,
                        iterator: &iterator,
                        outbound: outbound,
                        channel: channel
                    )
                case .ended(let reason):
                    join?.fail(reason)
                    return reason
                }
            }
        } catch {
            reason = "connection failed: \(Self.describe(error))"
        }
        logger.notice("connection closed", metadata: ["peer.host": "\(host)", "reason": "\(reason)"])
        return (reason, learned.withLockedValue { $0 })
    }

    /// What the handshake settled for a session: the groups it shares, which side dialled, and why it is kept
    /// whatever the overlay's bound, if it is (dialled to keep an address connected; carrying a join, until the
    /// joiner holds the group's history).
    private struct SessionTerms {
        let groups: Set<GroupID>
        let initiator: Bool
        let pin: AdmissionRules.Pin
    }

    /// After the handshake: the session, registered with the engine (or refused, when another session with the peer
    /// or the overlay's bound keeps it out), then driven until either side ends it. Returns why it ended.
    private func serveSession(
        _ meeting: HandshakeMeeting,
        _ terms: SessionTerms,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        channel: any Channel
    ) async -> String {
        let theirs = meeting.theirs
        let view: MembershipView
        do {
            view = try await engine.currentMembership()
        } catch {
            await Self.sendError(readingGroupsFailed(error), outbound: outbound)
            return "reading the groups failed: \(error)"
        }
        let session = PeerSession(
            peer: theirs.node,
            hello: theirs,
            initiator: terms.initiator,
            pin: terms.pin,
            host: meeting.host,
            engine: engine,
            scope: SessionScope(peer: meeting.peer, groups: terms.groups, view: view),
            clocks: await PeerSession.loadClocks(of: theirs.node, store: engine.store, logger: logger),
            logger: logger,
            closeConnection: { channel.close(promise: nil) }
        )
        if let refusal = await engine.register(session) {
            // "refused: busy", as when the peer refuses: the dialler retries such a peer later.
            let reason =
                refusal.code == .busy
                ? "refused: \(refusal.code): this node is full; \(theirs.node.short) is not a neighbour"
                : "duplicate session with \(theirs.node.short)"
            await Self.sendError(refusal, outbound: outbound)
            return reason
        }
        let ended = await drive(session, iterator: &iterator, outbound: outbound, channel: channel)
        await engine.unregister(session, reason: ended)
        return ended
    }

    /// Writes what the outbox holds, in order: what was queued together goes under one flush (the frame encoder then
    /// packs small frames into one TLS record), up to 64 KiB past the first message.
    private static func drain(
        _ outbox: Outbox,
        into outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        on channel: any Channel
    ) async throws {
        while let first = await outbox.next() {
            let batch = [first] + outbox.takeQueued(limit: 64 << 10)
            try await outbound.write(contentsOf: batch)
            // NIO takes writes from this task at once and hands them to the event loop later. Photo chunks and
            // thumbnails count as waiting until the loop has taken them, so that their senders (under
            // ``Outbox/waitForRoom()``) do not pile more into the loop's queue.
            let bulk = batch.filter(\.isBulk)
            for message in batch where !message.isBulk { outbox.wrote(message) }
            if !bulk.isEmpty { channel.eventLoop.execute { for message in bulk { outbox.wrote(message) } } }
        }
    }

    /// Why a session whose read loop ended without an error ended: the keepalive's timeout, or the ERROR this side
    /// closed it with from outside the loop (a store's outcome), or else the peer closed the connection.
    private static func endedQuietly(_ session: PeerSession, timedOut: WireError?) async -> String {
        if let error = timedOut { return "\(error.code): \(error.message)" }
        if let refusal = await session.refusal { return "\(refusal.code): \(refusal.message)" }
        return "closed by the peer"
    }

    private func drive(
        _ session: PeerSession,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        channel: any Channel
    ) async -> String {
        let idle = engine.configuration.idleTimeout
        let timedOut = NIOLockedValueBox<WireError?>(nil)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.drain(session.outbox, into: outbound, on: channel) }
                group.addTask {
                    // What we want pushed, then the first anti-entropy round.
                    let (wanted, version) = await self.engine.advertisement(for: session.peer)
                    await session.advertise(wanted, version: version)
                    await self.engine.shareFollows(with: session)
                    _ = await session.startRound(uncorking: true)
                    // INTEREST, the round's first message and any answers queued meanwhile leave together (here
                    // too, should the round not start).
                    session.outbox.uncork()
                }
                group.addTask {
                    try await Self.keepalive(
                        session,
                        idle: idle,
                        outbound: outbound,
                        channel: channel,
                        timedOut: timedOut
                    )
                }
                while let message = try await iterator.next() {
                    try await session.receive(message)
                }
                // Closed by the peer: what it sent is stored before the session ends.
                await session.finishIntake()
                group.cancelAll()
            }
            return await Self.endedQuietly(session, timedOut: timedOut.withLockedValue { $0 })
        } catch let error as PeerReportedError {
            // Never answer an ERROR with an ERROR.
            return "the peer refused: \(error.error.code): \(error.error.message)"
        } catch let error as WireError {
            // Best effort: the peer may already be gone, and the session ends either way; one that does not read is
            // closed within a second (linger's deadline, set before the write can wait).
            let deadline = channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
            try? await outbound.write(.error(error))
            await Self.linger(iterator: &iterator, channel: channel)
            deadline.cancel()
            return "\(error.code): \(error.message)"
        } catch is CancellationError {
            // This task is cancelled, and NIO refuses writes from a cancelled task: say goodbye from a new one.
            channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
            await Task { try? await outbound.write(.error(WireError(.shuttingDown, "the node is shutting down"))) }
                .value
            return "this node is shutting down"
        } catch {
            if let error = timedOut.withLockedValue({ $0 }) { return "\(error.code): \(error.message)" }
            return Self.describe(error)
        }
    }

    /// A ping every third of the idle time; silence for the whole idle time ends the session with ERROR timeout
    /// (noted in `timedOut`; closing the channel ends the session's read loop).
    private static func keepalive(
        _ session: PeerSession,
        idle: Duration,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        channel: any Channel,
        timedOut: NIOLockedValueBox<WireError?>
    ) async throws {
        var nonce: UInt64 = 0
        while !Task.isCancelled {
            try await Task.sleep(for: idle / 3)
            if ContinuousClock.now - (await session.lastReceived) > idle {
                let error = WireError(.timeout, "nothing received for \(idle)")
                timedOut.withLockedValue { $0 = error }
                // A peer that does not read never takes the ERROR: the close comes within a second.
                channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
                // Best effort, like every goodbye here: the session ends either way.
                try? await outbound.write(.error(error))
                channel.close(promise: nil)
                return
            }
            nonce += 1
            await session.send(.ping(nonce))
        }
    }

    /// After an ERROR: sends nothing more, then reads and drops what the peer still sends, for at most a second or until
    /// it closes. Closing with unread bytes would reset the connection, and a reset can destroy the ERROR before
    /// the peer reads it (a flooding peer always has bytes in flight).
    private static func linger(
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        channel: any Channel
    ) async {
        let deadline = channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
        defer { deadline.cancel() }
        // No half-close: NIOAsyncChannel may turn it into a full close, and a close with the peer's bytes unread
        // is a reset, which can destroy the ERROR in the peer's receive queue (seen with a THUMB_WANT flood).
        // The iterator ends at the peer's close or the deadline's; an error there ends the lingering too.
        while (try? await iterator.next()) != nil {}
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? WireError { return "\(error.code): \(error.message)" }
        if error is CancellationError { return "this node is shutting down" }
        return TransportFailure.words(error)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
