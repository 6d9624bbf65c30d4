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

/// Encodes outgoing ``WireMessage``s as frames. Small frames written before one flush are gathered into one buffer
/// (up to ``gatherLimit`` bytes), so that TLS sends them in one record rather than one record each (22 bytes of
/// overhead apiece). A larger frame goes out on its own, after what was gathered: the order never changes.
final class WireEncodingHandler: ChannelOutboundHandler {
    typealias OutboundIn = WireMessage
    typealias OutboundOut = ByteBuffer

    /// One TLS record's plaintext.
    static let gatherLimit = 16 << 10

    private var gathered: ByteBuffer?
    private var gatheredPromise: EventLoopPromise<Void>?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = WireCodec.encode(unwrapOutboundIn(data))
        if let gathered, gathered.readableBytes + frame.count > Self.gatherLimit { writeGathered(context: context) }
        guard frame.count < Self.gatherLimit else {
            context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame)), promise: promise)
            return
        }
        if gathered == nil { gathered = context.channel.allocator.buffer(capacity: max(frame.count, 1024)) }
        gathered!.writeBytes(frame)
        if let promise {
            if let gatheredPromise {
                gatheredPromise.futureResult.cascade(to: promise)
            } else {
                gatheredPromise = promise
            }
        }
    }

    func flush(context: ChannelHandlerContext) {
        writeGathered(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        // A channel that closes its output fails its unflushed writes; gathered frames are unflushed writes.
        if mode != .input { dropGathered() }
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        dropGathered()
    }

    private func dropGathered() {
        let promise = gatheredPromise
        gathered = nil
        gatheredPromise = nil
        promise?.fail(ChannelError.ioOnClosedChannel)
    }

    private func writeGathered(context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        let promise = gatheredPromise
        gathered = nil
        gatheredPromise = nil
        context.write(wrapOutboundOut(buffer), promise: promise)
    }
}
