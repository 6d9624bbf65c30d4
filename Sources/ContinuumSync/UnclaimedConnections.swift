import NIOConcurrencyHelpers
import NIOCore

/// Accepted connections that a server's stream has not handed to its serve loop yet, held here so that none is let
/// go unfinished.
///
/// NIO traps when an `NIOAsyncChannel` is released without its writer finished (`executeThenClose` finishes it). A
/// connection accepted while the listening socket closes, or while the serve loop stops, can be dropped by NIO's
/// stream of accepted connections before anyone holds it; its handler then releases the writer when the connection
/// becomes active, and the process traps (apple/swift-nio#2813, open; seen when a crowd of nodes stops while they
/// dial each other). Each connection is held from the child channel's initializer until the serve loop claims it;
/// one that closes first is finished here instead.
public final class UnclaimedConnections<Inbound: Sendable, Outbound: Sendable>: Sendable {
    private let held = NIOLockedValueBox<[ObjectIdentifier: NIOAsyncChannel<Inbound, Outbound>]>([:])

    public init() {}

    /// In the child channel's initializer, once the connection is wrapped.
    public func hold(_ connection: NIOAsyncChannel<Inbound, Outbound>) {
        let key = ObjectIdentifier(connection.channel)
        held.withLockedValue { $0[key] = connection }
        connection.channel.closeFuture.whenComplete { _ in
            guard let left = self.held.withLockedValue({ $0.removeValue(forKey: key) }) else { return }
            // Closed already: this only finishes its writer, and an error doing so leaves nothing to do.
            Task { try? await left.executeThenClose { _, _ in } }
        }
    }

    /// The serve loop takes `connection`: true when it is the loop's to run (it must call `executeThenClose`);
    /// false when it closed before and was finished here.
    public func claim(_ connection: NIOAsyncChannel<Inbound, Outbound>) -> Bool {
        held.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(connection.channel)) } != nil
    }
}
