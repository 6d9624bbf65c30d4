import CVips
import ContinuumCore
import Foundation

/// Checks a photo before it is posted, for the `post` command and the HTTP upload alike.
public enum PhotoIntake {
    /// The photo's type and size (from its header, as a post records them) and its EXIF metadata, after decoding
    /// every pixel: a damaged file (truncated, or garbage after a valid header) throws a ``MediaError`` saying
    /// what libvips found. Strict: a decoder warning (libjpeg's "Corrupt JPEG data") refuses the photo too, since
    /// that is what garbage after a valid header produces. Blocks for the decode (about 10–80 ms for a phone photo): call it off event loops.
    public static func inspect(file: URL) throws(MediaError) -> (ImageInfo, PhotoMetadata) {
        let data: Data
        do {
            data = try Data(contentsOf: file, options: .alwaysMapped)
        } catch {
            throw MediaError(.unreadable, "cannot read \(file.path): \(error.localizedDescription)")
        }
        let info: ImageInfo
        do {
            info = try ImageProbe.inspect(data)
        } catch {
            switch error {
            case .unrecognised: throw MediaError(.notAnImage, "\(error)")
            case .corrupt: throw MediaError(.damaged, "\(error)")
            }
        }
        let found = try Vips.run { () throws(MediaError) -> PhotoMetadata in
            let image = try open(file, strict: true)
            defer { cvips_unref(image) }
            var average = 0.0
            guard cvips_avg(image, &average) == 0 else {
                throw MediaError(
                    .damaged,
                    "the image is damaged: \(Vips.takeError() ?? "its pixels cannot be decoded")"
                )
            }
            return metadata(of: image)
        }
        return (info, found)
    }

    /// The photo's EXIF metadata, from its header only (no pixel is decoded).
    public static func metadata(file: URL) throws(MediaError) -> PhotoMetadata {
        try Vips.run { () throws(MediaError) -> PhotoMetadata in
            let image = try open(file)
            defer { cvips_unref(image) }
            return metadata(of: image)
        }
    }

    /// Decodes every pixel of a file; throws when it is not an image libvips reads or is damaged (as strictly as
    /// ``inspect(file:)``).
    public static func checkDecodable(file: URL) throws(MediaError) {
        try Vips.run { () throws(MediaError) in
            let image = try open(file, strict: true)
            defer { cvips_unref(image) }
            var average = 0.0
            guard cvips_avg(image, &average) == 0 else {
                throw MediaError(
                    .damaged,
                    "the image is damaged: \(Vips.takeError() ?? "its pixels cannot be decoded")"
                )
            }
        }
    }

    /// Opens a file for sequential reading; only inside ``Vips/run(_:)``.
    private static func open(_ file: URL, strict: Bool = false) throws(MediaError) -> UnsafeMutablePointer<VipsImage> {
        guard let image = cvips_open_sequential(file.path, strict ? VIPS_FAIL_ON_WARNING : VIPS_FAIL_ON_ERROR) else {
            throw MediaError(.notAnImage, "not an image this node can read: \(Vips.takeError() ?? "unknown format")")
        }
        return image
    }

    private static func metadata(of image: UnsafeMutablePointer<VipsImage>) -> PhotoMetadata {
        PhotoMetadata(orientation: Vips.int(image, "orientation")) { Vips.string(image, $0) }
    }
}
