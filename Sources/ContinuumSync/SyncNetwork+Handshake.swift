import ContinuumCore
import ContinuumSession
import ContinuumWire
import NIOConcurrencyHelpers
import NIOCore
import NIOSSL

// The executor of the handshake (PROTOCOL.md §7.8.3): what to do is the ``HandshakeMachine``'s; reading frames,
// writing them and asking the engine is here.

extension SyncNetwork {
    /// How the handshake ended.
    enum HandshakeEnd {
        /// The connection is a session now, on these terms.
        case established(HandshakeOutcome)
        /// Why the connection ends (the peer was told with an ERROR, where there is one to tell).
        case ended(String)
    }

    /// The handshake: feeds the machine the peer's frames and the engine's answers, and performs what it asks until
    /// it ends. `learned` takes the peer's id once its HELLO has passed the checks.
    func handshake(
        host: String,
        join: JoinAttempt?,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator,
        outbound: NIOAsyncChannelOutboundWriter<WireMessage>,
        channel: any Channel,
        learned: NIOLockedValueBox<AuthorID?>
    ) async throws -> HandshakeEnd {
        var machine = HandshakeMachine(ours: await engine.hello, host: host, join: join?.handshakeJoin)
        var pending = machine.start()[...]
        var link = LinkContext()
        while true {
            guard let action = pending.popFirst() else {
                pending = await Self.read(into: &machine, iterator: &iterator)[...]
                continue
            }
            switch action {
            case .send(.error(let error)):
                // The refusal of a stranger by a node in no group, which then waits for the peer's verdict.
                await Self.sendError(error, outbound: outbound)
            case .send(let message):
                try await outbound.write(message)
            case .refuse(let error, let reason):
                await Self.sendError(error, outbound: outbound)
                return .ended(reason)
            case .close(let reason):
                return .ended(reason)
            case .established(let outcome):
                return .established(outcome)
            case .checkHello(let hello):
                let verdict = await check(hello, channel: channel)
                if verdict == .passed { learned.withLockedValue { $0 = hello.node } }
                pending += machine.helloChecked(verdict)
            case .admit(let meeting, let membership):
                link = LinkContext(meeting: meeting, theirs: membership.link, recovery: membership.recovery)
                pending += await perform(action, machine: &machine, join: join)
            case .consentTo, .signLink, .recordLink, .recoverAccount, .takeRecovery:
                pending += await performLink(action, machine: &machine, join: join, context: link)
            default:
                pending += await perform(action, machine: &machine, join: join)
            }
        }
    }

    /// Reads the next frame and gives the machine what it was: a message, the stream's end, or why it failed. A frame
    /// that the decoder in the pipeline refused comes out of the stream as its ``WireError``; the cancellation of the
    /// connection's task means that the node is stopping.
    static func read(
        into machine: inout HandshakeMachine,
        iterator: inout NIOAsyncChannelInboundStream<WireMessage>.AsyncIterator
    ) async -> [HandshakeAction] {
        do {
            guard let message = try await iterator.next() else { return machine.streamEnded() }
            return machine.receive(message)
        } catch let error as WireError {
            return machine.decodeFailed(error)
        } catch is CancellationError {
            return machine.stopping()
        } catch {
            return machine.transportFailed(TransportFailure.words(error))
        }
    }

    /// The peer's HELLO against ours and its TLS certificate (``SyncEngine/check(_:tlsPeer:)``).
    private func check(_ theirs: Hello, channel: any Channel) async -> HelloVerdict {
        var tlsPeer: AuthorID?
        if tls != nil {
            do {
                tlsPeer = try await channel.nioSSL_peerCertificate().get().flatMap(TLSIdentity.author(of:))
            } catch {
                logger.failure("reading the peer's TLS certificate failed", error)
                return .certificateUnreadable("\(error)")
            }
            guard tlsPeer != nil else { return .noEd25519Certificate }
        }
        do {
            try await engine.check(theirs, tlsPeer: tlsPeer)
        } catch {
            return .refused(error)
        }
        return .passed
    }

    /// Performs an action that asks the engine or tells it something, and gives the machine the answer.
    private func perform(
        _ action: HandshakeAction,
        machine: inout HandshakeMachine,
        join: JoinAttempt?
    ) async -> [HandshakeAction] {
        switch action {
        case .prepareMembership(let meeting):
            switch await ourMembership(meeting, join: join) {
            case .success(let membership): return machine.membershipPrepared(membership)
            case .failure(let failure): return machine.engineFailed(failure.error, reason: failure.reason)
            }
        case .admit(let meeting, let membership):
            return machine.admitted(await admit(meeting, membership, joining: join != nil))
        case .checkJoined(let joined):
            do {
                let alreadyMember = try await engine.currentMembership().groups[joined.group] != nil
                return machine.joinedChecked(alreadyMember: alreadyMember)
            } catch {
                return machine.engineFailed(readingGroupsFailed(error), reason: "reading the groups failed: \(error)")
            }
        case .recordJoin(let joined):
            guard let join else { preconditionFailure("a join recorded on a connection that joins nothing") }
            do {
                try await engine.store.completeJoin(log: join.log, group: joined.group)
            } catch {
                logger.failure("recording the group joined failed", error)
                let refusal = WireError(.internal, "the joining node failed while recording the group joined")
                return machine.engineFailed(refusal, reason: "recording the group joined failed: \(error)")
            }
            await engine.refreshMembership()
            return machine.joinRecorded()
        case .shareWithExistingSession(let peer, let group):
            // A session with the peer that already exists keeps this connection from becoming one: it takes the
            // group instead.
            await engine.session(for: peer)?.scope.add(group)
        case .reportJoin(.joined(let group)): join?.finish(.success(group))
        case .reportJoin(.failed(let reason)): join?.fail(reason)
        case .reportJoin(.pending(let message)):
            // Asked again every few seconds while it waits: not logged each time, nor remembered as a refusal.
            join?.finish(.failure(JoinFailure(description: message, pending: true)))
        case .rememberRefusal(let meeting, let error): await refusedByPeer(meeting, error)
        case .rememberStranger(let meeting):
            let theirs = meeting.theirs
            await engine.refusedStranger(
                meeting.peer,
                name: theirs.name,
                host: meeting.host,
                port: Int(theirs.listenPort)
            )
        case .reportJoin(.linked): join?.finish(.success(nil))
        case .send, .checkHello, .refuse, .close, .established, .consentTo, .signLink, .recordLink, .recoverAccount,
            .takeRecovery:
            preconditionFailure("\(action) is performed by the handshake's loop")
        }
        return []
    }

    /// Writes `error` to the peer, best effort (`try?`): a courtesy to a peer whose connection ends either way, and a
    /// peer that is already gone cannot receive it. NIO refuses writes from a cancelled task (the node is stopping),
    /// so the ERROR is then written from a new one; the handshake's time limit closes a connection whose peer does
    /// not read.
    static func sendError(_ error: WireError, outbound: NIOAsyncChannelOutboundWriter<WireMessage>) async {
        if Task.isCancelled {
            await Task { try? await outbound.write(.error(error)) }.value
        } else {
            try? await outbound.write(.error(error))
        }
    }

    /// The ERROR for a peer when this node could not read its own groups (logged here).
    func readingGroupsFailed(_ error: any Error) -> WireError {
        logger.failure("reading the groups failed", error)
        return WireError(.internal, "the node failed while reading its groups")
    }
}
