import ContinuumWire
import NIOCore

/// Turns bytes into ``WireMessage``s with the pure ``FrameDecoder``; the first bad frame is an error that the
/// session answers with ERROR and a close.
final class WireDecodingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = WireMessage

    private var decoder = FrameDecoder()
    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        do {
            while let message = try decoder.next() {
                context.fireChannelRead(wrapInboundOut(message))
            }
        } catch {
            failed = true
            context.fireErrorCaught(error)
        }
    }
}

/// Encodes outgoing ``WireMessage``s as frames. Small frames written before one flush go down the pipeline as one
/// buffer: TLS makes at least one record of each buffer it is given (22 bytes of overhead apiece, and a record holds
/// 16 KiB), and the dozen small frames of a reconnect would otherwise cost a dozen records. A large frame (a photo chunk) goes on its own, after what was
/// gathered before it; order is kept.
final class WireEncodingHandler: ChannelOutboundHandler {
    typealias OutboundIn = WireMessage
    typealias OutboundOut = ByteBuffer

    /// Frames up to this size are gathered (a TLS record holds 16 KiB).
    static let smallFrame = 16 << 10

    private var gathered: ByteBuffer?
    private var gatheredPromises: [EventLoopPromise<Void>] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = WireCodec.encode(unwrapOutboundIn(data))
        guard frame.count <= Self.smallFrame else {
            writeGathered(context: context)
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame)), promise: promise)
            return
        }
        if gathered == nil { gathered = context.channel.allocator.buffer(capacity: max(frame.count, 1024)) }
        gathered!.writeBytes(frame)
        if let promise { gatheredPromises.append(promise) }
        if gathered!.readableBytes >= Self.smallFrame { writeGathered(context: context) }
    }

    func flush(context: ChannelHandlerContext) {
        writeGathered(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // What was written before a close goes ahead of it, as it would have without gathering.
        writeGathered(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        gathered = nil
        let promises = gatheredPromises
        gatheredPromises = []
        for promise in promises { promise.fail(ChannelError.ioOnClosedChannel) }
    }

    private func writeGathered(context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        gathered = nil
        let promises = gatheredPromises
        gatheredPromises = []
        guard !promises.isEmpty else {
            context.write(wrapOutboundOut(buffer), promise: nil)
            return
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenComplete { result in
            for waiting in promises { waiting.completeWith(result) }
        }
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}
