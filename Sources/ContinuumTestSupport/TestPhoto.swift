import ContinuumCore
import Foundation

/// Photos that tests name in records but never send.
public enum TestPhoto {
    /// A 640 × 480 JPEG of 1,000 bytes whose hash is that of `seed`'s bytes: records that need a photo reference,
    /// one per seed (the photo itself is never held).
    public static func reference(_ seed: String, bytes: UInt64 = 1000) -> PhotoReference {
        PhotoReference(
            sha256: AssetHash.of(Data(seed.utf8)),
            byteCount: bytes,
            mediaType: .jpeg,
            width: 640,
            height: 480
        )
    }
}
