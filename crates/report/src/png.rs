//! Charts as PNG, for blog posts and slides: the same SVG, rasterised at twice its size.

use resvg::{tiny_skia, usvg};

/// Sans-serif faces to draw text with, in order of preference; Debian's fonts-dejavu-core
/// gives the first.
const SANS: [&str; 4] = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans"];

/// Renders SVG to PNG with the system's fonts, loaded once.
pub struct Rasterizer {
    options: usvg::Options<'static>,
}

impl Rasterizer {
    /// Fails when the machine has no sans-serif font: charts without their labels would be
    /// unreadable.
    pub fn new() -> Result<Rasterizer, String> {
        let mut options = usvg::Options::default();
        let db = options.fontdb_mut();
        db.load_system_fonts();
        let families: Vec<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
            .collect();
        let Some(sans) = SANS
            .iter()
            .find(|s| families.iter().any(|f| f == *s))
            .map(|s| s.to_string())
        else {
            return Err(format!(
                "no sans-serif font found for the PNG charts (looked for {}); install one (apt install fonts-dejavu-core) or use --format svg",
                SANS.join(", ")
            ));
        };
        db.set_sans_serif_family(sans);
        Ok(Rasterizer { options })
    }

    /// The PNG bytes of `svg` at 2x.
    pub fn png(&self, svg: &str) -> Result<Vec<u8>, String> {
        let tree = usvg::Tree::from_str(svg, &self.options).map_err(|e| e.to_string())?;
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width() * 2, size.height() * 2)
            .ok_or("the chart has no area")?;
        resvg::render(
            &tree,
            tiny_skia::Transform::from_scale(2.0, 2.0),
            &mut pixmap.as_mut(),
        );
        pixmap.encode_png().map_err(|e| e.to_string())
    }
}
