import ContinuumCore
import ContinuumSession
import ContinuumWire
import Foundation
import NIOCore
import NIOEmbedded
import Testing

@testable import ContinuumSync

/// The handshake's executor (``SyncNetwork/read(into:iterator:)`` and ``SyncNetwork/sendError(_:outbound:)``) over an
/// in-memory channel carrying the real frame handlers, driving a ``HandshakeMachine``: a frame the decoder refuses in
/// the pipeline is still answered with its ERROR. The machine's own rules are in HandshakeMachineTests.
@Suite("Handshake: what each message gets, and every refusal an ERROR")
struct HandshakeRulesTests {
    private static let hello = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 7, count: 32))!,
        node: AuthorID(unchecked: Data(repeating: 0x11, count: 32)),
        name: "peer",
        listenPort: 7420,
        plaintext: true
    )
    private static let ours = Hello(
        nonce: SessionNonce(bytes: [UInt8](repeating: 1, count: 32))!,
        node: AuthorID(unchecked: Data(repeating: 0x22, count: 32)),
        plaintext: true
    )

    /// A machine that has sent its HELLO and waits for the peer's.
    private static func machine() -> HandshakeMachine {
        var machine = HandshakeMachine(ours: ours, host: "127.0.0.1")
        #expect(machine.start() == [.send(.hello(ours))])
        return machine
    }

    // MARK: Over a channel with the real frame handlers

    /// An in-memory connection with the node's frame decoder and encoder, wrapped as the node wraps a socket.
    private static func connection() async throws -> (NIOAsyncTestingChannel, WireChannel) {
        let channel = NIOAsyncTestingChannel()
        let wrapped = try await channel.testingEventLoop.executeInContext {
            try channel.pipeline.syncOperations.addHandler(WireDecodingHandler())
            try channel.pipeline.syncOperations.addHandler(WireEncodingHandler())
            return try WireChannel(wrappingChannelSynchronously: channel)
        }
        return (channel, wrapped)
    }

    /// The frames the node wrote, decoded.
    private static func written(_ channel: NIOAsyncTestingChannel) async throws -> [WireMessage] {
        var decoder = FrameDecoder()
        while let buffer = try await channel.readOutbound(as: ByteBuffer.self) {
            decoder.append(buffer.readableBytesView)
        }
        var messages: [WireMessage] = []
        while let message = try decoder.next() { messages.append(message) }
        return messages
    }

    /// Performs a final refusal as the executor does: its ERROR, if any, goes to the peer.
    private static func perform(
        _ actions: [HandshakeAction],
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async {
        for case .refuse(let error, _) in actions { await SyncNetwork.sendError(error, outbound: outbound) }
    }

    @Test(
        "a MEMBERSHIP the decoder refuses in the pipeline is answered with its ERROR before the close",
        arguments: [
            // Length 5: version 1, MEMBERSHIP, no claims, no tags, join flag 3.
            ([0, 0, 0, 5, 1, 3, 0, 0, 5], "MEMBERSHIP: join flag is 5; it must be 0 ... 4"),
            // Length 3: version 1, MEMBERSHIP, 33 claims (the count is refused before any claim is read).
            ([0, 0, 0, 3, 1, 3, 33], "MEMBERSHIP: 33 claims; the limit is 32"),
        ] as [([UInt8], String)]
    )
    func refusedInPipeline(frame: [UInt8], message: String) async throws {
        let (channel, connection) = try await Self.connection()
        let error = WireError(.malformedFrame, message)
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var machine = Self.machine()
            // The peer's HELLO and its bad MEMBERSHIP arrive in one read; the decoder's error goes down the pipeline
            // (where the test channel, at its end, reports it) and into the inbound stream.
            await #expect(throws: error) {
                try await channel.writeInbound(ByteBuffer(bytes: WireCodec.encode(.hello(Self.hello)) + frame))
            }
            #expect(await SyncNetwork.read(into: &machine, iterator: &iterator) == [.checkHello(Self.hello)])
            let meeting = HandshakeMeeting(theirs: Self.hello, ours: Self.ours, host: "127.0.0.1")
            #expect(machine.helloChecked(.passed) == [.prepareMembership(meeting)])
            #expect(machine.membershipPrepared(Membership()) == [.send(.membership(Membership()))])
            let actions = await SyncNetwork.read(into: &machine, iterator: &iterator)
            #expect(actions == [.refuse(error, reason: "handshake failed: malformed frame: \(message)")])
            await Self.perform(actions, outbound: outbound)
        }
        #expect(try await Self.written(channel) == [.error(error)])
        #expect(try await channel.testingEventLoop.executeInContext { !channel.isActive }, "closed after the ERROR")
    }

    @Test("a node stopping during the handshake still writes its ERROR shutting down from the cancelled task")
    func refusalWhenCancelled() async throws {
        let (channel, connection) = try await Self.connection()
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            // The connection's task is cancelled (the node stops) while it waits for the peer's HELLO.
            let waiting = Task {
                var machine = Self.machine()
                let actions = await SyncNetwork.read(into: &machine, iterator: &iterator)
                let error = WireError(.shuttingDown, "the node is shutting down")
                #expect(actions == [.refuse(error, reason: "this node is shutting down")])
                #expect(Task.isCancelled)
                await Self.perform(actions, outbound: outbound)
            }
            waiting.cancel()
            await waiting.value
        }
        #expect(try await Self.written(channel) == [.error(WireError(.shuttingDown, "the node is shutting down"))])
    }

    @Test("a first frame that is not HELLO is answered with unexpected message; a closed stream with nothing")
    func wrongOrderInPipeline() async throws {
        let (channel, connection) = try await Self.connection()
        try await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var machine = Self.machine()
            try await channel.writeInbound(ByteBuffer(bytes: WireCodec.encode(.ping(5))))
            let actions = await SyncNetwork.read(into: &machine, iterator: &iterator)
            let error = WireError(.unexpectedMessage, "expected HELLO")
            #expect(actions == [.refuse(error, reason: "refused: the first frame was PING, not HELLO")])
            await Self.perform(actions, outbound: outbound)
        }
        #expect(try await Self.written(channel) == [.error(WireError(.unexpectedMessage, "expected HELLO"))])

        let (quiet, silent) = try await Self.connection()
        try await silent.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var machine = Self.machine()
            try await quiet.close()
            let actions = await SyncNetwork.read(into: &machine, iterator: &iterator)
            #expect(actions == [.close(reason: "closed during the handshake (no HELLO within the time limit)")])
            await Self.perform(actions, outbound: outbound)
        }
        #expect(try await Self.written(quiet) == [])
    }
}
