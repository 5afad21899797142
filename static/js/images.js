// Task images: zoom and pan in a viewer (Viewer.js, vendored under static/vendor/viewerjs),
// every image of the item in one gallery (arrow keys, the strip below), and "side by side"
// for multi-image items (the images in one row, as wide as the page). Plain JS, no build step.
(() => {
  if (typeof Viewer === "undefined") return;
  document.querySelectorAll(".images").forEach((gallery) => {
    const images = Array.from(gallery.querySelectorAll("img"));
    if (!images.length) return;
    const viewer = new Viewer(gallery, {
      filter: (image) => images.includes(image),
      navbar: images.length > 1,
      title: [1, (image, size) => `${image.alt} (${size.naturalWidth} × ${size.naturalHeight})`],
      toolbar: { zoomIn: 1, zoomOut: 1, oneToOne: 1, reset: 1, prev: images.length > 1,
                 next: images.length > 1, rotateLeft: 1, rotateRight: 1 },
      transition: false,
      zIndex: 2000,
    });
    images.forEach((image, index) => {
      const caption = image.closest("figure")?.querySelector("figcaption");
      if (!caption) return;
      const zoom = document.createElement("button");
      zoom.type = "button";
      zoom.className = "link zoom";
      zoom.dataset.zoom = String(index + 1);
      zoom.textContent = caption.dataset.zoomLabel || "zoom";
      zoom.addEventListener("click", () => viewer.view(index));
      caption.append(" · ", zoom);
    });
    if (images.length > 1) {
      const toggle = document.createElement("button");
      toggle.type = "button";
      toggle.className = "link compare-toggle";
      toggle.setAttribute("aria-pressed", "false");
      const label = () => (gallery.classList.contains("compare")
        ? gallery.dataset.gridLabel || "Show as a grid"
        : gallery.dataset.compareLabel || "Side by side");
      toggle.textContent = label();
      toggle.addEventListener("click", () => {
        gallery.classList.toggle("compare");
        toggle.setAttribute("aria-pressed", String(gallery.classList.contains("compare")));
        toggle.textContent = label();
      });
      gallery.insertAdjacentElement("beforebegin", toggle);
    }
  });
})();
