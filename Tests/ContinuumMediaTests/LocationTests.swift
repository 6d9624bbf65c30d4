import ContinuumCore
import ContinuumTestSupport
import Foundation
import Testing

@testable import ContinuumMedia

private let media = NodeBinary.fixtures.appendingPathComponent("media")

/// `MetadataCleaner`, checked by readers that share no code with it: exiftool for the tags, Pillow for the pixels.
@Suite struct LocationRemovalTests {
    func temporaryFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("cleaned-\(UUID().uuidString)")
    }

    @Test(
        "every GPS tag and place name goes; orientation, date taken, colour profile and every pixel stay",
        arguments: ["rotated-gps.jpg", "gps.jpg", "gps.png", "gps.webp"]
    )
    func removesLocationLosslessly(_ name: String) throws {
        let source = media.appendingPathComponent(name)
        let before = try IndependentReaders.exiftool(source)
        // Not vacuous: exiftool sees the position in the fixture, and the XMP position and city where there are some.
        let located = IndependentReaders.locationTags(before)
        #expect(located.contains("GPS:GPSLatitude") && located.contains("GPS:GPSLongitude"), "\(located)")
        if name != "rotated-gps.jpg" {
            #expect(located.contains("XMP-exif:GPSLatitude") && located.contains("XMP-photoshop:City"), "\(located)")
        }

        let cleaned = temporaryFile()
        defer { try? FileManager.default.removeItem(at: cleaned) }
        let outcome = try MetadataCleaner.removeLocation(from: source, to: cleaned)
        guard case .removed(let tags) = outcome else {
            Issue.record("nothing removed from \(name)")
            return
        }
        #expect(tags.contains("Exif.GPSInfo.GPSLatitude"), "\(tags)")

        let after = try IndependentReaders.exiftool(cleaned)
        #expect(
            IndependentReaders.locationTags(after).isEmpty,
            "left in \(name): \(IndependentReaders.locationTags(after))"
        )
        #expect(after["IFD0:Orientation"] as? Int == 6, "\(after)")
        #expect(after["ExifIFD:DateTimeOriginal"] as? String == "2023:05:06 07:08:09")
        #expect(after["ExifIFD:OffsetTimeOriginal"] as? String == "+02:00")
        if name != "rotated-gps.jpg" {
            #expect(after["ICC_Profile:ProfileDescription"] as? String == "sRGB built-in", "\(name): ICC lost")
            #expect(after["XMP-xmp:CreatorTool"] as? String == "make-media-fixtures", "\(name): other XMP lost")
        }
        #expect(try IndependentReaders.samePixels(source, cleaned), "\(name): the pixels changed")
        // Our own reader agrees: no position, the same orientation and date.
        let (_, metadata) = try PhotoIntake.inspect(file: cleaned)
        #expect(metadata.location == nil && metadata.orientation == (name.hasSuffix(".png") ? 1 : 6))
        #expect(try MetadataCleaner.locationTags(in: cleaned).isEmpty)
        // Cleaning is deterministic: the same photo gives the same bytes, hence the same post hash.
        let again = temporaryFile()
        defer { try? FileManager.default.removeItem(at: again) }
        _ = try MetadataCleaner.removeLocation(from: source, to: again)
        #expect(try Data(contentsOf: again) == Data(contentsOf: cleaned))
    }

    @Test(
        "a photo without location metadata is left as it is, destination untouched",
        arguments: ["lake.png", "forest.webp", "anim.gif", "media/plain.gif", "media/noise.jpg"]
    )
    func nothingToRemove(_ name: String) throws {
        let source = NodeBinary.fixtures.appendingPathComponent(name)
        #expect(IndependentReaders.locationTags(try IndependentReaders.exiftool(source)).isEmpty)
        let destination = temporaryFile()
        #expect(try MetadataCleaner.removeLocation(from: source, to: destination) == .nothingToRemove)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test(
        "a location that cannot be removed without re-encoding is refused, saying to pass --keep-metadata",
        arguments: [("gps.heic", "HEIC"), ("gps-xmp.gif", "GIF")]
    )
    func refusesWhatCannotBeCleaned(_ name: String, _ format: String) throws {
        let source = media.appendingPathComponent(name)
        // exiftool sees a position in both.
        #expect(!IndependentReaders.locationTags(try IndependentReaders.exiftool(source)).isEmpty)
        let destination = temporaryFile()
        defer { try? FileManager.default.removeItem(at: destination) }
        #expect {
            try MetadataCleaner.removeLocation(from: source, to: destination)
        } throws: { error in
            guard let error = error as? MediaError else { return false }
            return error.kind == .locationNotRemovable && error.message.contains("this \(format)")
                && error.message.hasSuffix("pass --keep-metadata to post it as it is, with its location")
        }
    }

    @Test func locationKeys() {
        for key in [
            "Exif.GPSInfo.GPSLatitude", "Exif.Image.GPSTag", "Xmp.exif.GPSLongitude", "Xmp.drone-dji.GpsLatitude",
            "Xmp.photoshop.City", "Xmp.iptcExt.LocationCreated[1]/Iptc4xmpExt:City", "Iptc.Application2.City",
            "Iptc.Application2.CountryName",
        ] {
            #expect(MetadataCleaner.isLocation(key), "\(key)")
        }
        for key in [
            "Exif.Image.Orientation", "Exif.Photo.DateTimeOriginal", "Exif.Photo.OffsetTimeOriginal",
            "Exif.Photo.SubjectLocation", "Xmp.xmp.CreatorTool", "Xmp.photoshop.Credit",
        ] {
            #expect(!MetadataCleaner.isLocation(key), "\(key)")
        }
    }
}
