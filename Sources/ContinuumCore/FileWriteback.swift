import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Starts the kernel writing a file's new bytes to disk at once, without waiting for it (Linux's `sync_file_range`
/// with `SYNC_FILE_RANGE_WRITE`). A photo written piece by piece and then synced is then mostly on disk when its
/// `fsync` runs, which waits for the last pieces and the metadata only: the disk works while the rest of the photo
/// is still being hashed, written or received. It makes nothing durable (only `fsync` does), so a call that fails
/// or is missing costs only that head start.
public enum FileWriteback {
    /// Starts writing `length` bytes from `offset` of the open file `descriptor`.
    public static func start(_ descriptor: Int32, offset: Int64, length: Int64) {
        #if os(Linux)
        // Best effort by design (above): the caller's fsync is what it relies on.
        _ = syncFileRange?(descriptor, offset, length, writeFlag)
        #endif
    }

    /// Whether this system has the call (every Linux since 2.6.17): where it is missing, files are only synced.
    public static var isAvailable: Bool {
        #if os(Linux)
        syncFileRange != nil
        #else
        false
        #endif
    }

    #if os(Linux)
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32
    /// `SYNC_FILE_RANGE_WRITE`: start writeback of dirty pages in the range that are not already under writeback.
    private static let writeFlag: UInt32 = 2
    /// Glibc declares `sync_file_range` only for `_GNU_SOURCE` code, so Swift does not see it: found by name, once.
    private static let syncFileRange: SyncFileRange? = {
        guard let program = dlopen(nil, RTLD_NOW), let symbol = dlsym(program, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: SyncFileRange.self)
    }()
    #endif
}
