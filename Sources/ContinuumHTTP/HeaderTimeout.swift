import HummingbirdCore
import Logging
import NIOCore

/// Closes a connection that has not finished sending a request's headers within `timeout` (slowloris): a new
/// connection has that long for its first request's headers, and a kept-alive one that long from the first byte of
/// its next request. A connection idle between requests, with no byte of a next request, is not timed; neither is a
/// request's body, nor the response (an event stream lasts as long as it likes). Docs/API.md, "Limits".
///
/// Hummingbird's `idleTimeout` does not do this: it also closes a kept-alive connection idle between requests.
/// Two handlers share the deadline: ``HeaderTimeoutHandler`` sees the decoded request parts (it goes in
/// `HTTP1Channel.Configuration.additionalChannelHandlers`) and puts a ``HeaderBytesHandler``, which sees the raw
/// bytes, at the front of the pipeline, before the HTTP decoder.
final class HeaderTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    /// The request parts Hummingbird's HTTP/1 pipeline carries (`HTTPRequestPart`), as its own handler reads them.
    typealias InboundIn = HTTPConnectionStateHandler.InboundIn
    typealias InboundOut = HTTPConnectionStateHandler.InboundOut

    private let deadline: HeaderDeadline

    init(timeout: TimeAmount, logger: Logger) {
        deadline = HeaderDeadline(timeout: timeout, logger: logger)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        do {
            try context.pipeline.syncOperations.addHandler(HeaderBytesHandler(deadline), position: .first)
        } catch {
            deadline.logger.error("cannot time HTTP request headers", metadata: ["error": "\(error)"])
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            deadline.inRequest = true
            deadline.cancel()
        case .body:
            break
        case .end:
            // The next request's deadline starts with its first byte (HeaderBytesHandler).
            deadline.inRequest = false
        }
        context.fireChannelRead(data)
    }
}

/// Sees a connection's bytes before the HTTP decoder does: a byte while no request head is complete starts the
/// deadline (unless it runs already); so does a new connection.
final class HeaderBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let deadline: HeaderDeadline

    init(_ deadline: HeaderDeadline) {
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { deadline.start(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.cancel()
    }

    func channelActive(context: ChannelHandlerContext) {
        deadline.start(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Before the decoder sees these bytes: when they complete a head, HeaderTimeoutHandler cancels at once.
        if !deadline.inRequest { deadline.start(context) }
        context.fireChannelRead(data)
    }
}

/// The one deadline of a connection. Used on its event loop only, by its two handlers.
final class HeaderDeadline {
    let timeout: TimeAmount
    let logger: Logger
    /// Between a request's complete head and the end of its body.
    var inRequest = false
    private var scheduled: Scheduled<Void>?

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    /// Starts the deadline, unless it runs already: when it passes, the connection is closed.
    func start(_ context: ChannelHandlerContext) {
        guard scheduled == nil else { return }
        scheduled = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            scheduled = nil
            logger.debug(
                "HTTP connection closed: request headers not complete in time",
                metadata: [
                    "peer": "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")",
                    "timeout_ms": "\(timeout.nanoseconds / 1_000_000)",
                ]
            )
            context.close(promise: nil)
        }
    }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }
}

@available(*, unavailable)
extension HeaderTimeoutHandler: Sendable {}

@available(*, unavailable)
extension HeaderBytesHandler: Sendable {}

@available(*, unavailable)
extension HeaderDeadline: Sendable {}
