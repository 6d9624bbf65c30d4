import ContinuumCore
import ContinuumSync
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RunCommand {
    /// At most two malloc arenas, as many as the cores this node is built for: glibc gives each thread that
    /// allocates while another holds an arena one of its own (up to 8 per core), and the cooperative pool, NIO's
    /// event loops, SQLite's and libvips's threads each kept freed memory in theirs. With two, the receiver's peak
    /// RSS during a 100,000-record sync fell from 94 – 98 to 83 – 85 MiB (Docs/BENCHMARKS.md), which pays for the
    /// store's larger page cache.
    static func limitMallocArenas() {
        #if canImport(Glibc)
        // mallopt is in <malloc.h>, which the Glibc module does not bring in: found by name. M_ARENA_MAX is -8.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-8, 2)
        #endif
    }
}

extension RunCommand {
    /// `ID@HOST:PORT`: a node id (64 hex digits) and its address; nil for anything else.
    static func knownPeer(_ text: String) -> (node: AuthorID, address: PeerAddress)? {
        guard let at = text.firstIndex(of: "@"), let node = AuthorID(hex: text[..<at]),
            let address = PeerAddress(String(text[text.index(after: at)...]))
        else { return nil }
        return (node, address)
    }
}
