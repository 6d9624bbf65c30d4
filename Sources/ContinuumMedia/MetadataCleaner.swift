import CGExiv2
import ContinuumCore
import Foundation
import Synchronization

/// Removes where a photo was taken from its metadata, losslessly: the file is rewritten by exiv2 (through gexiv2),
/// which copies the compressed pixels as they are and changes only the metadata blocks.
///
/// Removed: every GPS tag (the EXIF GPS IFD and its pointer, XMP `exif:GPS*`, and any other EXIF, XMP or IPTC tag
/// whose name says GPS, such as a drone's `Xmp.drone-dji.GpsLatitude`), and the place names of XMP and IPTC (city,
/// state, country, sub-location, IPTC Extension's LocationCreated and LocationShown). Kept: everything else, among
/// it the orientation, the date taken (`DateTimeOriginal`, `OffsetTimeOriginal`) and the colour profile (ICC).
///
/// What each format allows (exiv2 0.27, Debian 12):
/// - JPEG and WebP: rewritten in place of their EXIF, XMP and IPTC blocks.
/// - PNG: rewritten; exiv2 writes the EXIF back as a `zTXt` "Raw profile type exif" chunk (read by exiftool and
///   ImageMagick) in place of an `eXIf` chunk. libvips reads neither, so nothing this node shows changes.
/// - HEIC: exiv2 reads it but cannot write it. One without a position is posted as it is; one with a position is
///   refused (``MediaError/Kind/locationNotRemovable``).
/// - GIF: no EXIF. Its only metadata that could hold a position is XMP, in an application extension that exiv2
///   neither reads nor writes: a GIF with the bytes `XMP DataXMP` (that extension's name) anywhere is refused, any
///   other is posted as it is.
///
/// After rewriting, the result is read again, by exiv2 and by libvips (a second reader, with a parser of its own):
/// if either still finds a position, the photo is refused rather than shared.
public enum MetadataCleaner {
    /// What ``removeLocation(from:to:)`` did.
    public enum Outcome: Sendable, Hashable {
        /// The photo holds no location: `destination` was not written, and the original is to be used as it is.
        case nothingToRemove
        /// `destination` holds the photo without these tags (exiv2's keys, in the order found).
        case removed([String])
    }

    /// The end of a ``MediaError/Kind/locationNotRemovable`` message: what the person can do. A front end that has no
    /// `--keep-metadata` option may replace it with its own words.
    public static let keepMetadataHint = "pass --keep-metadata to post it as it is, with its location"

    /// Writes `source` without its location to `destination` (a file that is overwritten), when it has one. Throws
    /// ``MediaError`` `.locationNotRemovable` when the photo may hold a location that cannot be removed without
    /// re-encoding, `.unreadable` when `source` cannot be read, and `.other` when `destination` cannot be written.
    /// Blocks (exiv2 reads the whole file): call it off the cooperative pool for large photos.
    public static func removeLocation(from source: URL, to destination: URL) throws(MediaError) -> Outcome {
        let data: Data
        do {
            data = try Data(contentsOf: source, options: .alwaysMapped)
        } catch {
            throw MediaError(.unreadable, "cannot read \(source.path): \(error.localizedDescription)")
        }
        let format = (try? ImageProbe.inspect(data))?.mediaType
        let name = format?.formatName ?? "image"
        if format == .gif {
            if data.range(of: Data("XMP DataXMP".utf8)) != nil {
                throw notRemovable("this GIF holds XMP metadata, which may say where it was taken and which")
            }
            return .nothingToRemove
        }
        let found = try Exiv2.run { () throws(MediaError) -> [String] in
            let metadata = try Exiv2.open(source, format: name)
            defer { cgexiv2_unref(metadata) }
            return Exiv2.locationTags(metadata)
        }
        if found.isEmpty {
            // A second reader: a position that libvips sees and exiv2 does not is never shared quietly.
            guard try PhotoIntake.metadata(file: source).location == nil else {
                throw notRemovable("exiv2 cannot find the position libvips reads in this \(name), so it")
            }
            return .nothingToRemove
        }
        guard let format, [.jpeg, .png, .webp].contains(format) else {
            let what = found.contains { $0.lowercased().contains("gps") } ? "a GPS position" : "a place name"
            throw notRemovable(
                "this \(name) says where it was taken (\(what)), and exiv2 cannot write \(name) files, so it"
            )
        }
        do {
            try data.write(to: destination)
        } catch {
            throw MediaError("cannot write \(destination.path): \(error.localizedDescription)")
        }
        try rewriteWithoutLocation(destination, format: name)
        let left = try locationTags(in: destination)
        guard left.isEmpty, try PhotoIntake.metadata(file: destination).location == nil else {
            throw notRemovable(
                "this \(name) still holds a location after cleaning (\(left.joined(separator: ", "))), so it"
            )
        }
        return .removed(found)
    }

    /// Removes the GPS block and every other location tag from `file` in place (exiv2 rewrites the metadata only).
    private static func rewriteWithoutLocation(_ destination: URL, format name: String) throws(MediaError) {
        try Exiv2.run { () throws(MediaError) in
            let metadata = try Exiv2.open(destination, format: name)
            defer { cgexiv2_unref(metadata) }
            var error: UnsafeMutablePointer<GError>?
            gexiv2_metadata_try_delete_gps_info(metadata, &error)
            try Exiv2.check(error, "cannot remove the GPS position from this \(name)")
            for tag in Exiv2.locationTags(metadata) {
                gexiv2_metadata_try_clear_tag(metadata, tag, &error)
                try Exiv2.check(error, "cannot remove \(tag) from this \(name)")
            }
            guard gexiv2_metadata_save_file(metadata, destination.path, &error) != 0 else {
                throw MediaError(
                    .locationNotRemovable,
                    "cannot rewrite this \(name) without its location: \(Exiv2.message(error)); \(keepMetadataHint)"
                )
            }
        }
    }

    /// The location tags exiv2 finds in a file (its keys: `Exif.GPSInfo.GPSLatitude`, `Xmp.photoshop.City`, …); empty
    /// when it has none. A GIF has none for exiv2, whatever its XMP says.
    public static func locationTags(in file: URL) throws(MediaError) -> [String] {
        try Exiv2.run { () throws(MediaError) -> [String] in
            let metadata = try Exiv2.open(file, format: "image")
            defer { cgexiv2_unref(metadata) }
            return Exiv2.locationTags(metadata)
        }
    }

    /// Whether an exiv2 key names a position: any tag whose name says GPS, and the place names of XMP and IPTC.
    static func isLocation(_ key: String) -> Bool {
        let key = key.lowercased()
        if key.contains("gps") { return true }
        return placeKeys.contains { key == $0 || key.hasPrefix($0 + "[") || key.hasPrefix($0 + "/") }
    }

    /// Place names (lowercased exiv2 keys; an XMP structure's fields follow as `key[1]/…`).
    static let placeKeys: [String] = [
        "xmp.photoshop.city", "xmp.photoshop.state", "xmp.photoshop.country", "xmp.iptc.location",
        "xmp.iptc.countrycode", "xmp.iptcext.locationcreated", "xmp.iptcext.locationshown",
        "iptc.application2.city", "iptc.application2.sublocation", "iptc.application2.provincestate",
        "iptc.application2.countryname", "iptc.application2.countrycode", "iptc.application2.locationname",
        "iptc.application2.locationcode",
    ]

    private static func notRemovable(_ reason: String) -> MediaError {
        MediaError(
            .locationNotRemovable,
            "\(reason) cannot be removed without re-encoding the photo; \(keepMetadataHint)"
        )
    }
}

/// The process's use of gexiv2: initialised once (a static's initialiser runs exactly once, thread-safely), and one
/// call at a time (exiv2's XMP toolkit is initialised without locks of its own).
enum Exiv2 {
    private static let initialized: Bool = gexiv2_initialize() != 0

    private static let lock = Mutex(())

    static func run<T>(_ body: () throws(MediaError) -> T) throws(MediaError) -> T {
        guard initialized else { throw MediaError("gexiv2 could not start") }
        return try lock.withLock { _ throws(MediaError) -> T in try body() }
    }

    /// Opens a file's metadata; release it with `cgexiv2_unref`. Only inside ``run(_:)``.
    static func open(_ file: URL, format: String) throws(MediaError) -> UnsafeMutablePointer<GExiv2Metadata> {
        guard let metadata = gexiv2_metadata_new() else { throw MediaError("gexiv2 could not start") }
        var error: UnsafeMutablePointer<GError>?
        guard gexiv2_metadata_open_path(metadata, file.path, &error) != 0 else {
            cgexiv2_unref(metadata)
            throw MediaError(
                .locationNotRemovable,
                "cannot read the metadata of this \(format) (\(message(error))), so a location in it cannot be "
                    + "removed; \(MetadataCleaner.keepMetadataHint)"
            )
        }
        return metadata
    }

    /// Every EXIF, XMP and IPTC key that names a position.
    static func locationTags(_ metadata: UnsafeMutablePointer<GExiv2Metadata>) -> [String] {
        var keys: [String] = []
        for list in [
            gexiv2_metadata_get_exif_tags(metadata), gexiv2_metadata_get_xmp_tags(metadata),
            gexiv2_metadata_get_iptc_tags(metadata),
        ] {
            guard let list else { continue }
            defer { g_strfreev(list) }
            var index = 0
            while let key = list[index] {
                let text = String(cString: key)
                if MetadataCleaner.isLocation(text), !keys.contains(text) { keys.append(text) }
                index += 1
            }
        }
        return keys
    }

    /// Throws a ``MediaError`` with `what` and gexiv2's message when `error` is set (and frees it).
    static func check(_ error: UnsafeMutablePointer<GError>?, _ what: String) throws(MediaError) {
        guard error != nil else { return }
        throw MediaError(.locationNotRemovable, "\(what): \(message(error)); \(MetadataCleaner.keepMetadataHint)")
    }

    /// gexiv2's message, freeing the error.
    static func message(_ error: UnsafeMutablePointer<GError>?) -> String {
        guard let raw = cgexiv2_take_error(error) else { return "unknown error" }
        defer { g_free(raw) }
        return String(cString: raw)
    }
}
