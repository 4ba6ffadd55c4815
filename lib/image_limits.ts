/**
 * What a prompt's images may be, shared by the daemon, which checks them (`lib/images.ts`), and the composer,
 * which says at once what the daemon would refuse. Imports nothing, so the island bundle can take it as is.
 */

/** Most images one prompt may carry. */
export const MAX_IMAGES = 10;
/** Largest image of a prompt, decoded. */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
/** Largest total of a prompt's images, decoded. */
export const MAX_IMAGES_TOTAL_BYTES = 20 * 1024 * 1024;
/** The image types pi's providers take. */
export const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"] as const;
