import ContinuumCore
import ContinuumWire
import NIOCore
import NIOSSL

// The HELLO exchange (PROTOCOL.md §7.8.3 steps 1 – 3), and the reads and refusals that every step of the handshake
// shares: what to do is ``HandshakeRules``', the socket work is here.

extension SyncNetwork {
    /// How the HELLO exchange ended.
    enum Handshake {
        /// Both HELLOs crossed and the peer's passed the checks.
        case accepted(Meeting)
        /// Why the connection ends (the peer was told with an ERROR, where there is one to tell).
        case ended(String)
    }

    /// Our HELLO, then the peer's, its TLS identity and the engine's checks.
    func handshake(
        host: String,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        channel: any Channel
    ) async throws -> Handshake {
        let ours = await engine.hello
        try await outbound.write(.hello(ours))
        let theirs: Hello
        switch await Self.read(.hello, iterator: &iterator) {
        case .proceed(let hello): theirs = hello
        case .peerRefused(let error): return .ended("the peer refused: \(error.code): \(error.message)")
        case .end(let error, let reason): return .ended(await Self.refuse(error, reason: reason, outbound: outbound))
        }
        var tlsPeer: AuthorID?
        if tls != nil {
            do {
                tlsPeer = try await channel.nioSSL_peerCertificate().get().flatMap(TLSIdentity.author(of:))
            } catch {
                logger.failure("reading the peer's TLS certificate failed", error)
                let refusal = WireError(.internal, "the node failed while reading your TLS certificate")
                return .ended(await Self.refuse(refusal, reason: "handshake failed: \(error)", outbound: outbound))
            }
            guard tlsPeer != nil else {
                let reason = "refused: no Ed25519 certificate from the peer"
                return .ended(
                    await Self.refuse(HandshakeRules.noEd25519Certificate, reason: reason, outbound: outbound)
                )
            }
        }
        do {
            try await engine.check(theirs, tlsPeer: tlsPeer)
        } catch {
            return .ended(await Self.refuse(error, reason: "refused: \(error.message)", outbound: outbound))
        }
        return .accepted(Meeting(theirs: theirs, ours: ours, host: host))
    }

    /// Reads the next frame and says what the handshake does with it at `stage` (``HandshakeRules/next(_:at:)``).
    /// A frame that the decoder in the pipeline refused comes out of the stream as its ``WireError``, which is then
    /// the ERROR to send.
    static func read<Payload>(
        _ stage: HandshakeStage<Payload>,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator
    ) async -> HandshakeAction<Payload> {
        let input: HandshakeInput
        do {
            input = try await iterator.next().map { .message($0) } ?? .closed
        } catch {
            input = .failed(error)
        }
        return HandshakeRules.next(input, at: stage)
    }

    /// Ends the handshake: writes `error` to the peer when there is one, and returns `reason`, for the log. The
    /// close follows when the connection's body returns.
    ///
    /// The write is best effort (`try?`): a courtesy to a peer whose connection ends either way, and a peer that is
    /// already gone cannot receive it. NIO refuses writes from a cancelled task (the node is stopping), so the ERROR
    /// is then written from a new one; the handshake's time limit closes a connection whose peer does not read.
    @discardableResult
    static func refuse(
        _ error: WireError?,
        reason: String,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>
    ) async -> String {
        guard let error else { return reason }
        if Task.isCancelled {
            await Task { try? await outbound.write(.error(error)) }.value
        } else {
            try? await outbound.write(.error(error))
        }
        return reason
    }
}
